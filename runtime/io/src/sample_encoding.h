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

// One sample's tar members as pieces to write in order: headers, small
// payloads (.cls text, .npy) and padding are in `scratch`; a bytes field's
// data stays where the caller has it (no copy). Valid until the next call.
class TarSample {
 public:
  void encode(const std::string& key, const std::vector<EncodedField>& fields,
              std::span<const std::span<const std::byte>> values);
  std::uint64_t size() const { return size_; }
  template <typename Write>
  void write(Write&& write) const {
    for (const Piece& p : pieces_)
      write(p.external ? std::span(p.external, p.size)
                       : std::as_bytes(std::span(scratch_.data() + p.offset, p.size)));
  }

 private:
  struct Piece {
    const std::byte* external;  // null: scratch_[offset, offset + size)
    std::size_t offset, size;
  };
  void member(const std::string& name, std::span<const std::byte> data, bool external);
  std::string scratch_, payload_;
  std::vector<Piece> pieces_;
  std::uint64_t size_ = 0;
};

// The serialized tf.train.Example of one sample, with its key as "__key__".
void encode_example(const std::string& key, const std::vector<EncodedField>& fields,
                    std::span<const std::span<const std::byte>> values, std::string& out);

// A .npy file (format 1.0) holding `data` as `dtype` with `shape`.
void encode_npy(DType dtype, std::span<const std::int64_t> shape, std::span<const std::byte> data,
                std::string& out);

}  // namespace sluice::io::detail
