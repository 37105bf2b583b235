// Fuzzes ImageDecoder (JPEG and PNG): any input decodes or throws
// sluice::Error naming the file, and what a decoder returns never depends on
// what it decoded before: the same bytes give the same pixels (or the same
// error) twice through one long-lived decoder and once through a fresh one.
// A region decode (DecodeOptions::region, libjpeg's skip and crop) of a region
// picked from the input fails exactly when the whole decode fails, and gives
// exactly the whole decode's pixels there; decode_crop of it never crashes.
// Whatever a decode leaves unread, it returns what reading every byte
// (strict, when that meets no warning) returns.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "sluice/error.h"
#include "sluice/ops/decode.h"
#include "sluice/ops/decode_crop.h"

namespace {

using sluice::ops::DecodeOptions;
using sluice::ops::ImageDecoder;

constexpr const char* kName = "fuzz-input";

struct Outcome {
  std::string error;
  int height = 0, width = 0, channels = 0, divisor = 0;
  sluice::ops::Rect region;  // where the pixels lie in the whole decode
  std::vector<std::uint8_t> pixels;

  bool operator==(const Outcome& o) const {
    return error == o.error && height == o.height && width == o.width && channels == o.channels &&
           divisor == o.divisor && pixels == o.pixels;
  }
};

Outcome decode(ImageDecoder& decoder, const std::uint8_t* data, std::size_t size, const DecodeOptions& options) {
  Outcome o;
  try {
    const sluice::ops::DecodedImage d = decoder.decode(data, size, kName, options);
    o.height = d.image.height, o.width = d.image.width, o.channels = d.image.channels;
    o.divisor = d.scale_divisor;
    o.region = d.region;
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

// The pixels of `whole` inside `r`, packed.
std::vector<std::uint8_t> crop_of(const Outcome& whole, const sluice::ops::Rect& r) {
  std::vector<std::uint8_t> out;
  const std::size_t pixel = whole.channels, row = static_cast<std::size_t>(whole.width) * pixel;
  for (int y = r.y; y < r.y + r.height; ++y) {
    const auto* p = whole.pixels.data() + y * row + r.x * pixel;
    out.insert(out.end(), p, p + r.width * pixel);
  }
  return out;
}

// A region of a width x height image, from the input's bytes.
sluice::ops::Rect pick_region(const std::uint8_t* data, std::size_t size, int width, int height) {
  const auto at = [&](std::size_t i) { return static_cast<unsigned>(data[i % size]) * 257u + data[(i * 7) % size]; };
  const int x = static_cast<int>(at(size / 3) % static_cast<unsigned>(width));
  const int y = static_cast<int>(at(size / 2) % static_cast<unsigned>(height));
  const int w = 1 + static_cast<int>(at(size / 5) % static_cast<unsigned>(width - x));
  const int h = 1 + static_cast<int>(at(size / 7) % static_cast<unsigned>(height - y));
  return {x, y, w, h};
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
  // A decode that may leave data unread (jpeg_markers.h) has the pixels of
  // one that reads every byte, whenever that one meets no warning at all.
  if (!options.strict) {
    DecodeOptions strict = options;
    strict.strict = true;
    const Outcome all = decode(fresh, data, size, strict);
    check(!all.error.empty() || all == first);
  }
  const Outcome header = info(shared, data, size, options);
  check(header == info(fresh, data, size, options));
  check(header.error.empty() || header.error.rfind(std::string(kName) + ": ", 0) == 0);

  if (!header.error.empty()) return 0;
  DecodeOptions with_region = options;
  with_region.region = pick_region(data, size, header.width, header.height);
  const Outcome part = decode(shared, data, size, with_region);
  check(part.error.empty() == first.error.empty());
  check(part.error.empty() || part.error.rfind(std::string(kName) + ": ", 0) == 0);
  if (part.error.empty()) {
    const sluice::ops::Rect& r = part.region;
    check(r.x >= 0 && r.y >= 0 && r.x + r.width <= first.width && r.y + r.height <= first.height);
    check(part.width == r.width && part.height == r.height && part.pixels == crop_of(first, r));
    if (!options.strict) {
      DecodeOptions strict = with_region;
      strict.strict = true;
      const Outcome all = decode(fresh, data, size, strict);
      check(!all.error.empty() || all == part);
    }
  }
  static sluice::ops::Resampler resampler;
  static std::vector<float> out(4 * 24 * 24);
  const sluice::ops::Rect& r = *with_region.region;
  try {
    sluice::ops::decode_crop(shared, resampler, data, size, kName,
                             {static_cast<double>(r.x), static_cast<double>(r.y), static_cast<double>(r.x + r.width),
                              static_cast<double>(r.y + r.height)},
                             out.data(), {.height = 24, .width = 24, .decode = options});
  } catch (const sluice::Error& e) {
    check(std::string(e.what()).rfind(std::string(kName) + ": ", 0) == 0);
  }
  return 0;
}
