// staged_layout.h: what one staged batch looks like in a device buffer,
// worked out once from the Loader's Options before anything is allocated.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sluice/cuda/normalize.h"
#include "sluice/cuda/normalize_job.h"
#include "sluice/dtype.h"
#include "sluice/options.h"

namespace sluice::cuda::detail {

inline constexpr std::size_t kDeviceAlignment = 256;

struct StagedField {
  std::string name;
  DType in_dtype = DType::u8;                 // as the Loader delivers it
  DType out_dtype = DType::u8;                // as the trainer receives it
  std::vector<std::int64_t> out_sample_shape;
  std::size_t in_sample_bytes = 0;
  std::size_t out_sample_bytes = 0;
  std::size_t offset = 0;                     // of the field in an entry's buffer
  // Finishing: the copy lands at scratch_offset of the scratch buffer and the
  // job (src, dst and samples filled in per batch) writes the field.
  std::optional<NormalizeJob> normalize;
  std::size_t scratch_offset = 0;
};

struct StagedLayout {
  std::uint32_t batch_size = 0;  // most samples a batch holds
  std::vector<StagedField> fields;
  std::size_t entry_bytes = 0;    // one ring buffer
  std::size_t scratch_bytes = 0;  // the copy stream's landing area for finished fields
};

// Throws Error naming the offending Normalize (unknown field, not uint8, bad
// mean/stddev, hwc_to_chw on a field that is not [H, W, C], ...).
StagedLayout plan_staged_layout(const Options& options, const std::vector<Normalize>& normalize);

}  // namespace sluice::cuda::detail
