// stage_test_support.h: Loaders with checkable content, and GPU detection, for
// the CUDA stage tests.
#pragma once

#include <cstdint>

#include "sluice/options.h"

namespace sluice::cuda::test {

// Fields: "image" uint8 [h, w, c] with pixel_value(index, k) at flat position
// k of the sample, and "label" int32 = the sample's index.
Options image_options(std::uint64_t n, std::uint32_t batch, std::uint32_t workers, std::int64_t h = 4,
                      std::int64_t w = 5, std::int64_t c = 3);

inline std::uint8_t pixel_value(std::uint64_t index, std::int64_t k) {
  return static_cast<std::uint8_t>((index * 31 + static_cast<std::uint64_t>(k) * 7) & 0xff);
}

// True when a CUDA device exists; otherwise reports why through Catch's WARN
// (shown in the test output) so a [gpu] test can return early.
bool have_gpu_or_warn();

}  // namespace sluice::cuda::test
