// Internal: one sample's fields as WebDataset tar members or as a serialized
// tf.train.Example (the encodings sluice/io/shard_writer.h states).
//
// Thread safety: a SampleEncoder is not synchronised; one per thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "sluice/dtype.h"
#include "sluice/io/manifest.h"

namespace sluice::io::detail {

struct EncodedField {
  bool bytes = false;   // a "bytes" field
  DType dtype = DType::u8;
  std::uint64_t elements = 0;
  std::string member_ext;  // tar
  const ManifestField* spec = nullptr;
};

// Checks the fields (names, dtypes, shapes) and fills in default extensions.
// Throws sluice::Error naming the field.
std::vector<EncodedField> prepare_fields(std::vector<ManifestField>& fields);

// The sample's key: its id in at least nine digits.
std::string sample_key(std::uint64_t id);

// Appends the tar members of one sample (headers, data, padding) to `out`.
void encode_tar_sample(const std::string& key, const std::vector<EncodedField>& fields,
                       std::span<const std::span<const std::byte>> values, std::string& out);

// The serialized tf.train.Example of one sample, with its key as "__key__".
void encode_example(const std::string& key, const std::vector<EncodedField>& fields,
                    std::span<const std::span<const std::byte>> values, std::string& out);

// A .npy file (format 1.0) holding `data` as `dtype` with `shape`.
void encode_npy(DType dtype, std::span<const std::int64_t> shape, std::span<const std::byte> data,
                std::string& out);

}  // namespace sluice::io::detail
