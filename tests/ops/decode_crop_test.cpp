// decode_crop (region decode + Resampler::resize_normalize) against the
// three steps it replaces, on real images: the same bytes in dst, bit for bit.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "sluice/error.h"
#include "sluice/ops/decode.h"
#include "sluice/ops/decode_crop.h"
#include "sluice/ops/geometry.h"
#include "sluice/ops/normalize.h"
#include "test_images.h"

using namespace sluice::ops;
using namespace sluice::ops::test;

namespace {

double uniform(void* state) { return std::uniform_real_distribution<double>(0, 1)(*static_cast<std::mt19937*>(state)); }

// decode(scale) + resize(box / divisor) + normalize: the split ops, as
// examples/imagenet.lua used them.
std::vector<std::uint8_t> split_ops(const std::vector<std::uint8_t>& bytes, const std::string& name, const Box& box,
                                    const DecodeCropOptions& o) {
  ImageDecoder decoder;
  Resampler resampler;
  DecodeOptions decode = o.decode;
  decode.scale = std::max(o.height / (box.y1 - box.y0), o.width / (box.x1 - box.x0));
  const DecodedImage d = decoder.decode(bytes.data(), bytes.size(), name, decode);
  const double s = d.scale_divisor;
  Box scaled{box.x0 / s, box.y0 / s, box.x1 / s, box.y1 / s};
  scaled.x1 = std::min(scaled.x1, static_cast<double>(d.image.width));
  scaled.y1 = std::min(scaled.y1, static_cast<double>(d.image.height));
  std::vector<std::uint8_t> resized(static_cast<std::size_t>(o.height) * o.width * d.image.pixel_bytes());
  const Image tmp = packed_image(resized.data(), o.height, o.width, d.image.channels, d.image.dtype);
  resampler.resize(d.image, scaled, tmp, o.filter);
  std::vector<std::uint8_t> out(static_cast<std::size_t>(o.height) * o.width * d.image.channels *
                                sluice::dtype_size(o.normalize.dtype));
  normalize(tmp, out.data(), o.normalize);
  return out;
}

// Random resized crops of every image, flipped or not, into every output
// dtype: decode_crop writes what the split ops write. Returns the count.
int compare(const std::string& file, DecodeCropOptions o, int crops) {
  const auto bytes = pillow_file(file);
  ImageDecoder decoder;
  Resampler resampler;
  const ImageInfo info = decoder.info(bytes.data(), bytes.size(), file, o.decode);
  std::mt19937 rng(static_cast<unsigned>(bytes.size()));
  int compared = 0;
  for (int i = 0; i < crops; ++i) {
    const Rect r = random_resized_crop(info.width, info.height, UniformSource{uniform, &rng});
    const Box box{static_cast<double>(r.x), static_cast<double>(r.y), static_cast<double>(r.x + r.width),
                  static_cast<double>(r.y + r.height)};
    o.normalize.flip = i % 2 == 1;
    o.normalize.dtype = i % 3 == 0 ? sluice::DType::f32 : i % 3 == 1 ? sluice::DType::f16 : sluice::DType::u8;
    INFO(file << ": crop " << r.width << "x" << r.height << " at (" << r.x << ", " << r.y << ") to " << o.width
              << "x" << o.height << (o.normalize.flip ? ", flipped" : ""));
    const std::vector<std::uint8_t> expected = split_ops(bytes, file, box, o);
    std::vector<std::uint8_t> got(expected.size() + 1, 0xAB);  // one guard byte past the end
    decode_crop(decoder, resampler, bytes.data(), bytes.size(), file, box, got.data(), o);
    CHECK(got.back() == 0xAB);
    got.pop_back();
    CHECK(got == expected);
    ++compared;
  }
  return compared;
}

const NormalizeOptions kImagenet{.mean = {0.485f, 0.456f, 0.406f}, .std = {0.229f, 0.224f, 0.225f}};

}  // namespace

TEST_CASE("decode_crop writes the bytes of decode + resize + normalize, on real photos") {
  if (!have_pillow_images()) return;
  // Baseline 4:2:0, 4:2:2, 4:4:4, progressive, a 2 MP photo, gray, CMYK, PNG.
  for (const char* file : {"flower.jpg", "iptc.jpg", "flower2.jpg", "app13-multiple.jpg", "icc_profile_big.jpg",
                           "xmp_test.jpg", "hopper_gray.jpg", "pil_sample_cmyk.jpg", "hopper.png"}) {
    CHECK(compare(file, {.normalize = kImagenet}, 12) == 12);
  }
  // Small outputs (the DCT scales down to 1/8), HWC, the area filter, upscaling.
  CHECK(compare("xmp_test.jpg", {.height = 24, .width = 32, .normalize = kImagenet}, 9) == 9);
  CHECK(compare("flower.jpg", {.height = 64, .width = 48, .filter = Filter::area,
                               .normalize = {.layout = Layout::hwc}}, 6) == 6);
  CHECK(compare("hopper.jpg", {.height = 300, .width = 260, .normalize = kImagenet}, 6) == 6);
  // Gray and RGBA outputs; 16-bit pixels.
  CHECK(compare("flower.jpg", {.decode = {.channels = 1}}, 6) == 6);
  CHECK(compare("iptc.jpg", {.decode = {.channels = 4}}, 6) == 6);
  CHECK(compare("app13-multiple.jpg", {.decode = {.dtype = sluice::DType::u16}, .normalize = kImagenet}, 6) == 6);
}

TEST_CASE("decode_crop takes its box in displayed coordinates under EXIF orientation") {
  if (!have_pillow_images()) return;
  for (int orientation = 2; orientation <= 8; ++orientation) {
    CHECK(compare("hopper_orientation_" + std::to_string(orientation) + ".jpg",
                  {.height = 32, .width = 40, .decode = {.apply_exif_orientation = true}, .normalize = kImagenet},
                  4) == 4);
  }
}

TEST_CASE("resize_normalize is resize then normalize when nothing is resized") {
  if (!have_pillow_images()) return;
  ImageDecoder decoder;
  const auto bytes = pillow_file("hopper.jpg");
  const Image image = decoder.decode(bytes.data(), bytes.size(), "hopper.jpg").image;
  Resampler resampler;
  std::vector<float> fused(128 * 128 * 3), plain(128 * 128 * 3);
  resampler.resize_normalize(image, Box{0, 0, 128, 128}, 128, 128, fused.data(), kImagenet);
  normalize(image, plain.data(), kImagenet);
  CHECK(fused == plain);
  // A whole-pixel crop at its own size: the crop's pixels.
  resampler.resize_normalize(image, Box{10, 20, 74, 84}, 64, 64, fused.data(), {.flip = true});
  fused.resize(64 * 64 * 3);
  plain.resize(64 * 64 * 3);
  normalize(crop(image, Rect{10, 20, 64, 64}), plain.data(), {.flip = true});
  CHECK(fused == plain);
}

TEST_CASE("decode_crop refuses a bad box naming the file, and leaves dst alone") {
  if (!have_pillow_images()) return;
  ImageDecoder decoder;
  Resampler resampler;
  const auto bytes = pillow_file("hopper.jpg");
  std::vector<float> out(224 * 224 * 3, 7.0f);
  for (const Box box : {Box{0, 0, 129, 10}, Box{-1, 0, 10, 10}, Box{5, 5, 5, 9}, Box{0, 0, NAN, 3}}) {
    try {
      decode_crop(decoder, resampler, bytes.data(), bytes.size(), "hopper.jpg", box, out.data(), {});
      FAIL("accepted the box (" << box.x0 << ", " << box.y0 << ", " << box.x1 << ", " << box.y1 << ")");
    } catch (const sluice::Error& e) {
      CHECK(std::string(e.what()).rfind("hopper.jpg: ", 0) == 0);
    }
  }
  const auto truncated = pillow_file("truncated_jpeg.jpg");
  CHECK_THROWS_WITH(decode_crop(decoder, resampler, truncated.data(), truncated.size(), "t.jpg", Box{0, 0, 8, 8},
                                out.data(), {}),
                    Catch::StartsWith("t.jpg: truncated JPEG"));
  CHECK(std::all_of(out.begin(), out.end(), [](float v) { return v == 7.0f; }));
}
