// Fuzzes tf.train.Example decoding: any bytes either parse, and every feature
// can then be read and converted, or parse() throws sluice::Error.
#include <cstdint>
#include <span>
#include <vector>

#include "sluice/error.h"
#include "sluice/io/example.h"

using namespace sluice;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  io::Example example;
  try {
    example.parse(std::span(reinterpret_cast<const std::byte*>(data), size));
  } catch (const Error&) {
    return 0;
  }
  for (const io::FeatureInfo& f : example.features()) {
    if (f.kind == io::FeatureKind::float_list) example.floats(f.name);
    if (f.kind == io::FeatureKind::int64_list) example.int64s(f.name);
    for (std::size_t i = 0; i < example.count(f.name) && i < 16; ++i) {
      if (f.kind == io::FeatureKind::bytes_list) example.bytes_at(f.name, i);
    }
    if (f.kind == io::FeatureKind::float_list || f.kind == io::FeatureKind::int64_list) {
      std::vector<std::byte> out(example.count(f.name) * sizeof(double));
      example.copy_to(f.name, DType::f64, out);
    }
  }
  return 0;
}
