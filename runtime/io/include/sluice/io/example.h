// sluice/io/example.h: tf.train.Example records decoded by feature name.
//
// Parsing is Sluice's own decoder of protocol buffers' wire format for
// TensorFlow's example.proto and feature.proto (no libprotobuf: Debian's
// libsentencepiece bundles a second copy under the same names), with
// protobuf's semantics: packed or unpacked numeric lists, merged repeated
// messages, the last entry of a duplicated feature name, unknown fields
// skipped; a known field with the wrong wire type is an error (protobuf would
// drop the feature silently). See src/example_decoder.h. A parsed Example
// exposes each feature's list: float_list and int64_list as typed spans over
// the parsed values, bytes_list as string views; copy_to() converts a numeric
// list into a typed buffer (a batch field) of a given DType.
//
// tf.train.SequenceExample: parse_sequence() reads one; its context features
// are then the features (the accessors without a step), and each feature_list
// is a list of Features, one per step: the accessors with `step` read step
// `step` of the feature_list `name`. parse() refuses a SequenceExample (it
// would otherwise drop the feature_lists) with an error that says so and names
// parse_sequence / sluice.sequence_example.
//
// Errors: parse() throws sluice::Error("malformed tf.train.Example (N bytes):
// <what is wrong> at byte K") and the accessors throw sluice::Error naming the
// feature (and step) when it is absent or of another kind. Callers add the
// file and record. Nothing is printed. Memory: linear in the record's size.
//
// Thread safety: an Example is not synchronised; use one per thread. parse()
// copies the record: views stay valid until the next parse() or the
// Example's destruction, whatever becomes of the bytes parsed.
#pragma once

#include "sluice/export.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/dtype.h"

namespace sluice::io {

enum class FeatureKind : std::uint8_t { none, bytes_list, float_list, int64_list };

// "bytes_list", "float_list", "int64_list" or "none".
SLUICE_API std::string_view feature_kind_name(FeatureKind kind);

struct SLUICE_API FeatureInfo {
  std::string name;
  FeatureKind kind;
  std::size_t count;   // values in the list
};

class SLUICE_API Example {
 public:
  // The `step` argument's default: the features (a SequenceExample's context).
  static constexpr std::size_t kFeatures = static_cast<std::size_t>(-1);

  Example();
  ~Example();
  Example(const Example&) = delete;
  Example& operator=(const Example&) = delete;

  // Replaces the content with the serialized Example in `bytes`. A
  // SequenceExample is refused (see above).
  void parse(std::span<const std::byte> bytes);
  // Replaces the content with the serialized SequenceExample in `bytes`.
  void parse_sequence(std::span<const std::byte> bytes);
  bool is_sequence() const;

  // Every feature, sorted by name; feature_lists(): every feature_list, with
  // its first step's kind and its step count.
  std::vector<FeatureInfo> features() const;
  std::vector<FeatureInfo> feature_lists() const;
  // Steps in the feature_list `name`; 0 when absent (or not a SequenceExample).
  std::size_t steps(std::string_view name) const;

  FeatureKind kind(std::string_view name, std::size_t step = kFeatures) const;  // none when absent

  std::span<const float> floats(std::string_view name, std::size_t step = kFeatures) const;
  std::span<const std::int64_t> int64s(std::string_view name, std::size_t step = kFeatures) const;
  std::vector<std::string_view> bytes(std::string_view name, std::size_t step = kFeatures) const;

  // Values in the list `name`, whatever its kind; 0 when absent.
  std::size_t count(std::string_view name, std::size_t step = kFeatures) const;
  // Entry i (< count) of the bytes_list `name`, without building a vector.
  std::string_view bytes_at(std::string_view name, std::size_t i, std::size_t step = kFeatures) const;

  // Converts the numeric list `name` to `dtype` into `out`, which must hold
  // exactly count * dtype_size(dtype) bytes for the list's count. Throws
  // sluice::Error on a size mismatch, naming the feature and both counts.
  void copy_to(std::string_view name, DType dtype, std::span<std::byte> out,
               std::size_t step = kFeatures) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sluice::io
