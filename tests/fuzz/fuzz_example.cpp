// Fuzzes tf.train.Example and SequenceExample decoding (runtime/io's own
// wire-format decoder): any bytes either parse, and every feature and every
// feature_list step can then be read and converted, or parse() /
// parse_sequence() throws sluice::Error.
#include <cstdint>
#include <span>
#include <vector>

#include "sluice/error.h"
#include "sluice/io/example.h"

using namespace sluice;

namespace {

void read_feature(const io::Example& example, const std::string& name, io::FeatureKind kind, std::size_t step) {
  if (kind == io::FeatureKind::float_list) example.floats(name, step);
  if (kind == io::FeatureKind::int64_list) example.int64s(name, step);
  const std::size_t count = example.count(name, step);
  for (std::size_t i = 0; i < count && i < 16; ++i) {
    if (kind == io::FeatureKind::bytes_list) example.bytes_at(name, i, step);
  }
  if (kind == io::FeatureKind::float_list || kind == io::FeatureKind::int64_list) {
    std::vector<std::byte> out(count * sizeof(double));
    example.copy_to(name, DType::f64, out, step);
  }
}

void read_all(const io::Example& example) {
  for (const io::FeatureInfo& f : example.features()) read_feature(example, f.name, f.kind, io::Example::kFeatures);
  for (const io::FeatureInfo& l : example.feature_lists())
    for (std::size_t t = 0; t < example.steps(l.name) && t < 16; ++t)
      read_feature(example, l.name, example.kind(l.name, t), t);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto bytes = std::span(reinterpret_cast<const std::byte*>(data), size);
  io::Example example;
  try {
    example.parse(bytes);
    read_all(example);
  } catch (const Error&) {
  }
  try {
    example.parse_sequence(bytes);
    read_all(example);
  } catch (const Error&) {
  }
  return 0;
}
