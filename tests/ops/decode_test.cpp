#include <catch2/catch.hpp>

#include <cstring>
#include <string>
#include <vector>

#include "sluice/error.h"
#include "sluice/ops/decode.h"
#include "test_images.h"

using namespace sluice::ops;
using namespace sluice::ops::test;

namespace {

void put_be32(std::uint8_t* p, std::uint32_t v) {
  p[0] = v >> 24, p[1] = v >> 16, p[2] = v >> 8, p[3] = v;
}

// A 1 KB PNG whose (valid) header claims width x height.
std::vector<std::uint8_t> png_claiming(std::uint32_t width, std::uint32_t height) {
  std::vector<std::uint8_t> png = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 13, 'I', 'H', 'D', 'R'};
  png.resize(png.size() + 13 + 4);
  std::uint8_t* ihdr = png.data() + 16;
  put_be32(ihdr, width);
  put_be32(ihdr + 4, height);
  ihdr[8] = 8, ihdr[9] = 2;  // 8-bit RGB
  put_be32(ihdr + 13, crc32(png.data() + 12, 17));
  png.resize(1024, 0);
  return png;
}

// hopper.jpg cut to 1 KB, its frame header claiming width x height.
std::vector<std::uint8_t> jpeg_claiming(std::uint16_t width, std::uint16_t height) {
  std::vector<std::uint8_t> jpeg = pillow_file("hopper.jpg");
  for (std::size_t i = 2; i + 9 < jpeg.size(); ++i) {
    if (jpeg[i] == 0xFF && (jpeg[i + 1] == 0xC0 || jpeg[i + 1] == 0xC2)) {
      jpeg[i + 5] = height >> 8, jpeg[i + 6] = height & 0xff;
      jpeg[i + 7] = width >> 8, jpeg[i + 8] = width & 0xff;
      break;
    }
  }
  jpeg.resize(1024);
  return jpeg;
}

}  // namespace

TEST_CASE("a JPEG decodes to the channels and dtype asked for") {
  if (!have_pillow_images()) return;
  ImageDecoder decoder;
  const auto bytes = pillow_file("hopper.jpg");
  const ImageInfo info = decoder.info(bytes.data(), bytes.size(), "hopper.jpg");
  CHECK(info.format == ImageFormat::jpeg);
  CHECK(info.width == 128);
  CHECK(info.height == 128);
  CHECK(info.channels == 3);

  const auto rgb = own(decoder.decode(bytes.data(), bytes.size(), "hopper.jpg").image);
  CHECK(rgb.image.width == 128);
  CHECK(rgb.image.channels == 3);
  CHECK(rgb.image.dtype == sluice::DType::u8);

  const Image gray = decoder.decode(bytes.data(), bytes.size(), "hopper.jpg", {.channels = 1}).image;
  REQUIRE(gray.channels == 1);
  // libjpeg's Y plane against the luma of the upsampled RGB: equal but for chroma edges.
  double sum = 0;
  for (int y = 0; y < 128; ++y) {
    for (int x = 0; x < 128; ++x) {
      const std::uint8_t* p = rgb.image.row<std::uint8_t>(y) + 3 * x;
      const double luma = 0.299 * p[0] + 0.587 * p[1] + 0.114 * p[2];
      sum += std::abs(luma - gray.row<std::uint8_t>(y)[x]);
    }
  }
  CHECK(sum / (128 * 128) < 1.5);

  const Image rgba = decoder.decode(bytes.data(), bytes.size(), "hopper.jpg", {.channels = 4}).image;
  REQUIRE(rgba.channels == 4);
  CHECK(std::memcmp(rgba.row<std::uint8_t>(5) + 4 * 7, rgb.image.row<std::uint8_t>(5) + 3 * 7, 3) == 0);
  CHECK(rgba.row<std::uint8_t>(5)[4 * 7 + 3] == 255);

  const Image wide = decoder.decode(bytes.data(), bytes.size(), "hopper.jpg", {.dtype = sluice::DType::u16}).image;
  REQUIRE(wide.dtype == sluice::DType::u16);
  CHECK(wide.row<std::uint16_t>(9)[11] == rgb.image.row<std::uint8_t>(9)[11] * 257);
}

TEST_CASE("a JPEG decodes downscaled in the DCT") {
  if (!have_pillow_images()) return;
  CHECK(jpeg_scale_divisor(1.0) == 1);
  CHECK(jpeg_scale_divisor(0.6) == 1);
  CHECK(jpeg_scale_divisor(0.5) == 2);
  CHECK(jpeg_scale_divisor(0.3) == 2);
  CHECK(jpeg_scale_divisor(0.2) == 4);
  CHECK(jpeg_scale_divisor(0.125) == 8);
  CHECK(jpeg_scale_divisor(0.01) == 8);
  ImageDecoder decoder;
  const auto bytes = pillow_file("hopper.jpg");
  const auto full = own(decoder.decode(bytes.data(), bytes.size(), "hopper.jpg").image);
  for (int divisor : {2, 4, 8}) {
    const DecodedImage d = decoder.decode(bytes.data(), bytes.size(), "hopper.jpg", {.scale = 1.0 / divisor});
    CHECK(d.scale_divisor == divisor);
    CHECK(d.image.width == 128 / divisor);
    CHECK(d.image.height == 128 / divisor);
    CHECK(d.info.width == 128);
    // Each pixel is close to the mean of the full-size block it stands for.
    double sum = 0;
    for (int dy = 0; dy < divisor; ++dy) {
      for (int dx = 0; dx < divisor; ++dx) sum += full.image.row<std::uint8_t>(40 + dy)[3 * (40 + dx)];
    }
    CHECK(std::abs(sum / (divisor * divisor) - d.image.row<std::uint8_t>(40 / divisor)[3 * (40 / divisor)]) < 12);
  }
}

TEST_CASE("PNG layouts decode to RGB, gray and 16 bits") {
  if (!have_pillow_images()) return;
  ImageDecoder decoder;
  const auto png = pillow_file("hopper.png");
  const auto jpg = pillow_file("hopper.jpg");
  const auto from_png = own(decoder.decode(png.data(), png.size(), "hopper.png").image);
  const auto from_jpg = own(decoder.decode(jpg.data(), jpg.size(), "hopper.jpg").image);
  CHECK(mean_abs_diff(from_png.image, from_jpg.image) < 4);

  const auto bytes16 = pillow_file("i_trns.png");
  const ImageInfo info = decoder.info(bytes16.data(), bytes16.size(), "i_trns.png");
  CHECK(info.bit_depth == 16);
  const auto wide = own(decoder.decode(bytes16.data(), bytes16.size(), "t", {.dtype = sluice::DType::u16}).image);
  const Image narrow = decoder.decode(bytes16.data(), bytes16.size(), "t").image;
  REQUIRE(wide.image.dtype == sluice::DType::u16);
  int worst = 0;
  for (int y = 0; y < narrow.height; ++y) {
    for (int i = 0; i < narrow.width * 3; ++i) {
      const int expect = (wide.image.row<std::uint16_t>(y)[i] + 128) / 257;
      worst = std::max(worst, std::abs(expect - narrow.row<std::uint8_t>(y)[i]));
    }
  }
  CHECK(worst <= 1);

  const auto palette = pillow_file("p_16.png");
  const Image gray = decoder.decode(palette.data(), palette.size(), "p_16.png", {.channels = 1}).image;
  CHECK(gray.channels == 1);
}

TEST_CASE("a CMYK JPEG matches its RGB twin") {
  if (!have_pillow_images()) return;
  ImageDecoder decoder;
  const auto cmyk = pillow_file("pil_sample_cmyk.jpg");
  const auto rgb = pillow_file("pil_sample_rgb.jpg");
  CHECK(decoder.info(cmyk.data(), cmyk.size(), "cmyk").channels == 4);
  const auto a = own(decoder.decode(cmyk.data(), cmyk.size(), "cmyk").image);
  const Image b = decoder.decode(rgb.data(), rgb.size(), "rgb").image;
  REQUIRE(a.image.width == b.width);
  CHECK(mean_abs_diff(a.image, b) < 8);
}

TEST_CASE("EXIF orientation is applied on request") {
  if (!have_pillow_images()) return;
  ImageDecoder decoder;
  const auto upright_bytes = pillow_file("hopper.jpg");
  const auto upright = own(decoder.decode(upright_bytes.data(), upright_bytes.size(), "hopper.jpg").image);
  for (int orientation = 2; orientation <= 8; ++orientation) {
    const std::string name = "hopper_orientation_" + std::to_string(orientation) + ".jpg";
    const auto bytes = pillow_file(name);
    CHECK(decoder.info(bytes.data(), bytes.size(), name, true).orientation == orientation);
    CHECK(decoder.info(bytes.data(), bytes.size(), name, false).orientation == 1);
    const DecodedImage d = decoder.decode(bytes.data(), bytes.size(), name, {.apply_exif_orientation = true});
    CHECK(d.info.orientation == orientation);
    REQUIRE(d.image.width == 128);
    INFO(name);
    CHECK(mean_abs_diff(d.image, upright.image) < 6);
  }
  const auto rect = pillow_file("orientation_rectangle.jpg");
  const ImageInfo stored = decoder.info(rect.data(), rect.size(), "r", false);
  const ImageInfo shown = decoder.info(rect.data(), rect.size(), "r", true);
  const DecodedImage d = decoder.decode(rect.data(), rect.size(), "r", {.apply_exif_orientation = true});
  CHECK(d.image.width == shown.width);
  CHECK(d.image.height == shown.height);
  if (shown.orientation >= 5) CHECK(shown.width == stored.height);
}

TEST_CASE("a 1 KB file claiming 64000x64000 pixels is refused before allocating") {
  if (!have_pillow_images()) return;
  ImageDecoder decoder;
  const std::string png_error = decode_error(decoder, png_claiming(64000, 64000), "huge.png");
  CHECK(png_error.rfind("huge.png: ", 0) == 0);
  CHECK(png_error.find("64000x64000") != std::string::npos);
  CHECK(png_error.find("limit") != std::string::npos);
  const std::string jpeg_error = decode_error(decoder, jpeg_claiming(64000, 64000), "huge.jpg");
  CHECK(jpeg_error.rfind("huge.jpg: ", 0) == 0);
  CHECK(jpeg_error.find("limit") != std::string::npos);

  const auto hopper = pillow_file("hopper.jpg");
  CHECK(decode_error(decoder, hopper, "hopper.jpg", {.max_pixels = 128 * 128}).empty());
  CHECK(decode_error(decoder, hopper, "hopper.jpg", {.max_pixels = 128 * 127}).find("limit") != std::string::npos);
}

TEST_CASE("truncated, corrupt and foreign bytes give an error naming the file") {
  if (!have_pillow_images()) return;
  ImageDecoder decoder;
  for (const char* name : {"truncated_jpeg.jpg", "truncated_image.png", "broken.png", "broken_data_stream.png"}) {
    INFO(name);
    const std::string error = decode_error(decoder, pillow_file(name), name);
    CHECK(error.rfind(std::string(name) + ": ", 0) == 0);
  }
  CHECK(decode_error(decoder, {}, "empty.jpg") == "empty.jpg: the file is empty");
  CHECK(decode_error(decoder, {'G', 'I', 'F', '8', '9', 'a'}, "x.gif").rfind("x.gif: not a JPEG or PNG", 0) == 0);
  // Every prefix of a good file either decodes or fails cleanly.
  for (const char* name : {"hopper.jpg", "hopper.png"}) {
    const auto bytes = pillow_file(name);
    for (std::size_t n = 1; n < bytes.size(); n += 97) {
      const std::vector<std::uint8_t> cut(bytes.begin(), bytes.begin() + n);
      const std::string error = decode_error(decoder, cut, name);
      if (!error.empty()) CHECK(error.rfind(std::string(name) + ": ", 0) == 0);
    }
  }
  // The decoder is still good after failures.
  const auto good = pillow_file("hopper.jpg");
  CHECK(decoder.decode(good.data(), good.size(), "hopper.jpg").image.width == 128);
}

TEST_CASE("decode options are checked") {
  if (!have_pillow_images()) return;
  ImageDecoder decoder;
  const auto bytes = pillow_file("hopper.jpg");
  CHECK_THROWS_AS(decoder.decode(bytes.data(), bytes.size(), "h", {.channels = 2}), sluice::Error);
  CHECK_THROWS_AS(decoder.decode(bytes.data(), bytes.size(), "h", {.dtype = sluice::DType::f32}), sluice::Error);
  CHECK_THROWS_AS(decoder.decode(bytes.data(), bytes.size(), "h", {.scale = 0}), sluice::Error);
}
