// Region-of-interest decode (DecodeOptions::region): on real JPEGs of every
// layout (baseline and progressive, 4:2:0 / 4:2:2 / 4:4:4 and odd samplings,
// gray, CMYK, EXIF-oriented) and PNGs, at every DCT scale, a region decodes to
// exactly the pixels of a whole decode at DecodedImage::region; and a broken
// file fails the same way with a region as without.
#include <catch2/catch.hpp>

#include <random>
#include <string>
#include <vector>

#include "sluice/error.h"
#include "sluice/ops/decode.h"
#include "sluice/ops/geometry.h"
#include "test_images.h"

using namespace sluice::ops;
using namespace sluice::ops::test;

namespace {

// Rectangles of a width x height image: the whole, corners, edges, thin
// strips, single pixels, then random ones (a fixed seed per image).
std::vector<Rect> regions_of(int width, int height, unsigned seed) {
  std::vector<Rect> r = {{0, 0, width, height},
                         {0, 0, 1, 1},
                         {width - 1, height - 1, 1, 1},
                         {0, height / 2, width, 1},
                         {width / 2, 0, 1, height},
                         {width / 3, height / 3, (width + 2) / 3, (height + 2) / 3},
                         {0, 0, (width + 1) / 2, (height + 1) / 2},
                         {width / 2, height / 2, width - width / 2, height - height / 2}};
  std::mt19937 rng(seed);
  for (int i = 0; i < 24; ++i) {
    const int w = std::uniform_int_distribution<int>(1, width)(rng);
    const int h = std::uniform_int_distribution<int>(1, height)(rng);
    r.push_back({std::uniform_int_distribution<int>(0, width - w)(rng),
                 std::uniform_int_distribution<int>(0, height - h)(rng), w, h});
  }
  return r;
}

// Every region of `bytes` decodes to the matching pixels of a whole decode,
// at each DCT scale. Returns the number of regions compared.
int check_regions(const std::vector<std::uint8_t>& bytes, const std::string& name, DecodeOptions options) {
  ImageDecoder whole_decoder, region_decoder;
  int compared = 0;
  for (const int divisor : {1, 2, 4, 8}) {
    options.scale = 1.0 / divisor;
    options.region.reset();
    const DecodedImage whole = whole_decoder.decode(bytes.data(), bytes.size(), name, options);
    const ImageInfo& info = whole.info;
    CHECK(whole.region.x == 0);
    CHECK(whole.region.width == whole.image.width);
    for (const Rect& r : regions_of(info.width, info.height, static_cast<unsigned>(bytes.size()) + divisor)) {
      INFO(name << " at 1/" << divisor << ": region " << r.width << "x" << r.height << " at (" << r.x << ", "
                << r.y << ")");
      options.region = r;
      const DecodedImage part = region_decoder.decode(bytes.data(), bytes.size(), name, options);
      REQUIRE(part.scale_divisor == whole.scale_divisor);
      const int d = part.scale_divisor;
      // The smallest rectangle of the scaled decode that covers r.
      CHECK(part.region.x == r.x / d);
      CHECK(part.region.y == r.y / d);
      CHECK(part.region.x + part.region.width == (r.x + r.width + d - 1) / d);
      CHECK(part.region.y + part.region.height == (r.y + r.height + d - 1) / d);
      CHECK(part.info.width == info.width);
      CHECK(part.info.height == info.height);
      CHECK(same_pixels(part.image, crop(whole.image, part.region)));
      ++compared;
    }
  }
  return compared;
}

void check_pillow_file(const std::string& file, const DecodeOptions& options = {}) {
  INFO(file);
  CHECK(check_regions(pillow_file(file), file, options) == 4 * 32);
}

}  // namespace

TEST_CASE("a region of a real JPEG decodes to exactly the whole decode's pixels there") {
  if (!have_pillow_images()) return;
  // Baseline 4:2:0, 4:2:2 and 4:4:4; progressive 4:2:0 and 4:4:4; sizes that
  // are not multiples of the MCU; a 2 MP photo.
  for (const char* file : {"hopper.jpg", "flower.jpg", "flower2.jpg", "iptc.jpg", "sugarshack_bad_mpo_header.jpg",
                           "exif-72dpi-int.jpg", "app13-multiple.jpg", "icc_profile_big.jpg", "rgb.jpg",
                           "imageops_pad_v_1.jpg", "junk_jpeg_header.jpg", "xmp_test.jpg"}) {
    check_pillow_file(file);
  }
}

TEST_CASE("a region of a gray, CMYK or 1-pixel JPEG, and of any JPEG as gray or RGBA") {
  if (!have_pillow_images()) return;
  for (const char* file : {"hopper_gray.jpg", "hopper_bad_exif.jpg", "pil_sample_cmyk.jpg", "jfif_unit_cm.jpg"}) {
    check_pillow_file(file);
  }
  check_pillow_file("flower.jpg", {.channels = 1});
  check_pillow_file("iptc.jpg", {.channels = 4});
  check_pillow_file("icc_profile_big.jpg", {.channels = 1, .dtype = sluice::DType::u16});
}

TEST_CASE("a region is in displayed coordinates when EXIF orientation is applied") {
  if (!have_pillow_images()) return;
  for (int orientation = 2; orientation <= 8; ++orientation) {
    check_pillow_file("hopper_orientation_" + std::to_string(orientation) + ".jpg",
                      {.apply_exif_orientation = true});
  }
  check_pillow_file("orientation_rectangle.jpg", {.apply_exif_orientation = true});
  check_pillow_file("empty_gps_ifd.jpg", {.apply_exif_orientation = true});
  // A non-square photo, rotated: its displayed size is its stored size swapped.
  if (!shell("/usr/bin/python3 -c 'import PIL' 2>/dev/null")) {
    WARN("skipped: a rotated photo (/usr/bin/python3 with Debian's python3-pil is absent)");
    return;
  }
  TempDir dir;
  REQUIRE(shell("/usr/bin/python3 -c 'import sys; from PIL import Image; im = Image.open(sys.argv[1]);"
                " e = im.getexif(); e[0x112] = 6; im.save(sys.argv[2], exif=e, quality=90)' " +
                pillow_path("flower.jpg") + " " + dir.file("f6.jpg")));
  const auto bytes = read_bytes(dir.file("f6.jpg"));
  ImageDecoder decoder;
  const ImageInfo info = decoder.info(bytes.data(), bytes.size(), "f6.jpg", true);
  CHECK(info.orientation == 6);
  CHECK(info.width == 360);
  CHECK(info.height == 480);
  CHECK(check_regions(bytes, "f6.jpg", {.apply_exif_orientation = true}) == 4 * 32);
}

TEST_CASE("a region of every chroma sampling, baseline and progressive, made by cjpeg from a photo") {
  if (!have_pillow_images() || !have_program("/usr/bin/cjpeg", "libjpeg-turbo-progs")) return;
  TempDir dir;
  {
    ImageDecoder decoder;
    const auto flower = pillow_file("flower.jpg");
    write_ppm(dir.file("src.ppm"), decoder.decode(flower.data(), flower.size(), "flower.jpg").image);
  }
  for (const char* sampling : {"1x1,1x1,1x1", "2x1,1x1,1x1", "2x2,1x1,1x1", "1x2,1x1,1x1", "4x1,1x1,1x1",
                               "1x1,2x2,2x2", "2x2,1x2,2x1"}) {
    for (const char* mode : {"", "-progressive", "-restart 1"}) {
      INFO("cjpeg -sample " << sampling << " " << mode);
      const std::string jpg = dir.file("s.jpg");
      REQUIRE(shell(std::string("/usr/bin/cjpeg -quality 85 ") + mode + " -sample " + sampling + " " +
                    dir.file("src.ppm") + " > " + jpg));
      CHECK(check_regions(read_bytes(jpg), "s.jpg", {}) == 4 * 32);
    }
  }
}

TEST_CASE("a region of a PNG is the whole decode cropped") {
  if (!have_pillow_images()) return;
  check_pillow_file("hopper.png");
  check_pillow_file("exif_imagemagick_orientation.png", {.apply_exif_orientation = true});
}

TEST_CASE("a region outside the image is an error naming the file") {
  if (!have_pillow_images()) return;
  ImageDecoder decoder;
  for (const char* file : {"hopper.jpg", "hopper.png"}) {
    const auto bytes = pillow_file(file);
    for (const Rect r : {Rect{-1, 0, 10, 10}, Rect{0, 0, 129, 10}, Rect{120, 0, 10, 10}, Rect{0, 0, 0, 5}}) {
      const std::string error = decode_error(decoder, bytes, file, {.region = r});
      INFO(error);
      CHECK(error.rfind(std::string(file) + ": the region ", 0) == 0);
      CHECK(error.find("is not inside the 128x128 image") != std::string::npos);
    }
  }
}

TEST_CASE("a broken JPEG fails with a region as without one") {
  if (!have_pillow_images()) return;
  ImageDecoder decoder;
  const auto hopper = pillow_file("hopper.jpg");
  // Truncated anywhere after the header: the rows after the region are still
  // read, so the loss is seen even when the region lies above it.
  for (const std::size_t keep : {hopper.size() - 2, hopper.size() - 100, hopper.size() / 2, std::size_t{700}}) {
    const std::vector<std::uint8_t> cut(hopper.begin(), hopper.begin() + static_cast<std::ptrdiff_t>(keep));
    const std::string whole = decode_error(decoder, cut, "cut.jpg");
    INFO("kept " << keep << " bytes: " << whole);
    CHECK(whole.rfind("cut.jpg: truncated JPEG", 0) == 0);
    for (const Rect r : {Rect{0, 0, 16, 16}, Rect{40, 40, 30, 20}, Rect{100, 100, 28, 28}}) {
      for (const double scale : {1.0, 0.25}) {
        CHECK(decode_error(decoder, cut, "cut.jpg", {.scale = scale, .region = r}) ==
              decode_error(decoder, cut, "cut.jpg", {.scale = scale}));
      }
    }
  }
  for (const char* file : {"truncated_jpeg.jpg", "truncated_app14.jpg", "jpeg_ff00_header.jpg", "ultrahdr.jpg"}) {
    const auto bytes = pillow_file(file);
    for (const bool strict : {false, true}) {
      const std::string whole = decode_error(decoder, bytes, file, {.strict = strict});
      const std::string part = decode_error(decoder, bytes, file, {.strict = strict, .region = Rect{0, 0, 8, 8}});
      INFO(file << (strict ? " strict: " : ": ") << whole);
      CHECK(part == whole);
    }
  }
  const std::string bogus = decode_error(decoder, bogus_huffman(hopper), "bogus.jpg", {.region = Rect{0, 0, 8, 8}});
  CHECK(bogus.rfind("bogus.jpg: ", 0) == 0);
}
