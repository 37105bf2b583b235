// Fuzzes ImageDecoder (JPEG and PNG): any input decodes or throws
// sluice::Error naming the file, and what a decoder returns never depends on
// what it decoded before: the same bytes give the same pixels (or the same
// error) twice through one long-lived decoder and once through a fresh one.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "sluice/error.h"
#include "sluice/ops/decode.h"

namespace {

using sluice::ops::DecodeOptions;
using sluice::ops::ImageDecoder;

constexpr const char* kName = "fuzz-input";

struct Outcome {
  std::string error;
  int height = 0, width = 0, channels = 0, divisor = 0;
  std::vector<std::uint8_t> pixels;

  bool operator==(const Outcome&) const = default;
};

Outcome decode(ImageDecoder& decoder, const std::uint8_t* data, std::size_t size, const DecodeOptions& options) {
  Outcome o;
  try {
    const sluice::ops::DecodedImage d = decoder.decode(data, size, kName, options);
    o.height = d.image.height, o.width = d.image.width, o.channels = d.image.channels;
    o.divisor = d.scale_divisor;
    for (int y = 0; y < d.image.height; ++y) {
      const auto* row = d.image.row<std::uint8_t>(y);
      o.pixels.insert(o.pixels.end(), row, row + d.image.row_bytes());
    }
  } catch (const sluice::Error& e) {
    o.error = e.what();
  }
  return o;
}

Outcome info(ImageDecoder& decoder, const std::uint8_t* data, std::size_t size, const DecodeOptions& options) {
  Outcome o;
  try {
    const sluice::ops::ImageInfo i = decoder.info(data, size, kName, options);
    o.height = i.height, o.width = i.width, o.channels = i.channels, o.divisor = i.orientation;
  } catch (const sluice::Error& e) {
    o.error = e.what();
  }
  return o;
}

void check(bool ok) {
  if (!ok) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static ImageDecoder shared;  // carries whatever earlier inputs left behind
  // The last byte picks the options, so that every output layout is reached.
  const std::uint8_t pick = size > 0 ? data[size - 1] : 0;
  const DecodeOptions options{.channels = (pick & 3) == 1 ? 1 : (pick & 3) == 2 ? 4 : 3,
                              .scale = 1.0 / (1 << ((pick >> 2) & 3)),
                              .apply_exif_orientation = (pick & 16) != 0,
                              .max_pixels = std::uint64_t{1} << 22,
                              .strict = (pick & 32) != 0};
  const Outcome first = decode(shared, data, size, options);
  const Outcome second = decode(shared, data, size, options);
  ImageDecoder fresh;
  const Outcome alone = decode(fresh, data, size, options);
  check(first == second && first == alone);
  check(first.error.empty() || first.error.rfind(std::string(kName) + ": ", 0) == 0);
  const Outcome header = info(shared, data, size, options);
  check(header == info(fresh, data, size, options));
  check(header.error.empty() || header.error.rfind(std::string(kName) + ": ", 0) == 0);
  return 0;
}
