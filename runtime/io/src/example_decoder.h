// Internal: tf.train.Example and tf.train.SequenceExample decoded from
// protocol buffers' wire format (proto_wire.h) into flat arrays, for
// sluice/io/example.h.
//
// The messages (TensorFlow's example.proto and feature.proto):
//   Example          { Features features = 1; }
//   SequenceExample  { Features context = 1; FeatureLists feature_lists = 2; }
//   Features         { map<string, Feature> feature = 1; }
//   FeatureLists     { map<string, FeatureList> feature_list = 1; }
//   FeatureList      { repeated Feature feature = 1; }
//   Feature          { oneof kind { BytesList bytes_list = 1; FloatList float_list = 2;
//                                   Int64List int64_list = 3; } }
//   BytesList { repeated bytes value = 1; }  FloatList { repeated float value = 1; }
//   Int64List { repeated int64 value = 1; }
// decoded as protobuf parses them: numeric lists packed or not (or both,
// mixed); a message field that appears twice is merged (lists concatenated,
// maps joined); a oneof member replaces the other; a map key seen twice keeps
// its last entry; a map entry without key or value has "" or an empty Feature;
// unknown fields are skipped per wire type; map keys must be UTF-8 (proto3
// strings). Stricter than protobuf in one way: a known field with another
// wire type than its own (which protobuf would keep as an unknown field,
// silently losing the feature) is an error.
//
// Errors: sluice::Error "malformed tf.train.Example (N bytes): <what is
// wrong> at byte K" (or SequenceExample). Memory: linear in the record's size
// (every value stored takes at least one byte of it); the arrays keep their
// capacity from one record to the next.
//
// Thread safety: an ExampleDecoder is not synchronised; one per thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/io/example.h"

namespace sluice::io::detail {

// One Feature: `count` values from index `first` of the array of its kind.
struct DecodedFeature {
  FeatureKind kind = FeatureKind::none;
  std::size_t first = 0;
  std::size_t count = 0;
};

struct DecodedEntry {  // of Features
  std::string_view name;
  DecodedFeature feature;
};

struct DecodedList {  // of FeatureLists: `count` steps from index `first` of steps
  std::string_view name;
  std::size_t first = 0;
  std::size_t count = 0;
};

class ExampleDecoder {
 public:
  // Replaces the content with `bytes` decoded as a SequenceExample
  // (`sequence`) or an Example; the bytes are copied, so views stay valid
  // until the next decode. Throws sluice::Error (above).
  void decode(std::span<const std::byte> bytes, bool sequence);

  // Whether the last decode, as an Example, met a length-delimited field 2:
  // a SequenceExample's feature_lists, unknown to an Example.
  bool saw_field_2() const { return saw_field_2_; }

  // The features (a SequenceExample's context) and feature_lists, each sorted
  // by name, one entry per name.
  const std::vector<DecodedEntry>& features() const { return features_; }
  const std::vector<DecodedList>& feature_lists() const { return lists_; }
  const DecodedFeature* find(std::string_view name) const;
  const DecodedList* find_list(std::string_view name) const;

  const DecodedFeature& step(const DecodedList& list, std::size_t i) const { return steps_[list.first + i]; }
  std::span<const float> floats(const DecodedFeature& f) const { return {floats_.data() + f.first, f.count}; }
  std::span<const std::int64_t> int64s(const DecodedFeature& f) const { return {int64s_.data() + f.first, f.count}; }
  std::string_view bytes_at(const DecodedFeature& f, std::size_t i) const { return bytes_[f.first + i]; }

 private:
  class Walk;
  std::vector<std::byte> record_;  // the copy every view points into
  std::vector<float> floats_;
  std::vector<std::int64_t> int64s_;
  std::vector<std::string_view> bytes_;
  std::vector<DecodedFeature> steps_;
  std::vector<DecodedEntry> features_;
  std::vector<DecodedList> lists_;
  std::string what_;
  bool saw_field_2_ = false;
};

}  // namespace sluice::io::detail
