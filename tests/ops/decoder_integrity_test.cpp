// One ImageDecoder through good and broken files: a failure leaves nothing
// behind, fatal JPEG errors are errors whatever warnings came before, and
// the warning policy (jpeg.h) holds.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "sluice/error.h"
#include "sluice/ops/decode.h"
#include "test_images.h"

using namespace sluice::ops;
using namespace sluice::ops::test;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

using Bytes = std::vector<std::uint8_t>;

// Two stray bytes before the first DQT: libjpeg's JWRN_EXTRANEOUS_DATA.
Bytes extraneous_bytes(Bytes jpeg) {
  const std::size_t dqt = find_segment(jpeg, 0xDB);
  REQUIRE(dqt != 0);
  jpeg.insert(jpeg.begin() + static_cast<std::ptrdiff_t>(dqt), {0x00, 0x00});
  return jpeg;
}

// The first quantization table renumbered from 0 to 3, so that table 0,
// used by the luma component, is never defined: a fatal error at the scan.
Bytes without_table_0(Bytes jpeg) {
  const std::size_t dqt = find_segment(jpeg, 0xDB);
  REQUIRE(dqt != 0);
  REQUIRE((jpeg[dqt + 4] & 0x0F) == 0);
  jpeg[dqt + 4] |= 3;
  return jpeg;
}

Bytes cut(const Bytes& bytes, std::size_t size) { return Bytes(bytes.begin(), bytes.begin() + size); }

struct File {
  std::string name;
  Bytes bytes;
  bool good;
};

std::vector<File> sequence() {
  const Bytes hopper = pillow_file("hopper.jpg");
  return {
      {"hopper.jpg", hopper, true},
      {"bogus_huffman.jpg", bogus_huffman(hopper), false},
      {"pil_sample_cmyk.jpg", pillow_file("pil_sample_cmyk.jpg"), true},
      {"hopper_cut.jpg", cut(hopper, hopper.size() * 2 / 3), false},
      {"hopper_gray.jpg", pillow_file("hopper_gray.jpg"), true},
      {"truncated_jpeg.jpg", pillow_file("truncated_jpeg.jpg"), false},
      {"hopper.png", pillow_file("hopper.png"), true},
      {"fatal_after_warning.jpg", extraneous_bytes(without_table_0(hopper)), false},
      {"broken.png", pillow_file("broken.png"), false},
      {"hopper_extraneous.jpg", extraneous_bytes(hopper), true},
      {"truncated_image.png", pillow_file("truncated_image.png"), false},
      {"hopper.jpg", hopper, true},
  };
}

}  // namespace

TEST_CASE("good files decode through one decoder exactly as through a fresh one, after any failure") {
  if (!have_pillow_images()) return;
  const DecodeOptions modes[] = {{}, {.channels = 1}, {.channels = 4, .scale = 0.5}};
  for (const DecodeOptions& mode : modes) {
    ImageDecoder shared;
    int good = 0, bad = 0;
    for (const File& f : sequence()) {
      INFO(f.name << ", channels " << mode.channels);
      if (f.good) {
        const OwnedImage once = own(shared.decode(f.bytes.data(), f.bytes.size(), f.name, mode).image);
        ImageDecoder fresh;
        CHECK(same_pixels(once.image, fresh.decode(f.bytes.data(), f.bytes.size(), f.name, mode).image));
        ++good;
      } else {
        CHECK_THAT(decode_error(shared, f.bytes, f.name, mode), StartsWith(f.name + ": "));
        ++bad;
      }
    }
    CHECK(good == 6);
    CHECK(bad == 6);
  }
}

TEST_CASE("info() through one decoder matches a fresh decoder after any failure") {
  if (!have_pillow_images()) return;
  ImageDecoder shared;
  int refused = 0;
  for (const File& f : sequence()) {
    INFO(f.name);
    std::string shared_error, fresh_error;
    ImageInfo a, b;
    try {
      a = shared.info(f.bytes.data(), f.bytes.size(), f.name, true);
    } catch (const sluice::Error& e) {
      shared_error = e.what();
    }
    try {
      ImageDecoder fresh;
      b = fresh.info(f.bytes.data(), f.bytes.size(), f.name, true);
    } catch (const sluice::Error& e) {
      fresh_error = e.what();
    }
    CHECK(shared_error == fresh_error);
    if (!shared_error.empty()) {
      CHECK_THAT(shared_error, StartsWith(f.name + ": "));
      ++refused;
    }
    CHECK(a.width == b.width);
    CHECK(a.height == b.height);
    CHECK(a.channels == b.channels);
    CHECK(a.orientation == b.orientation);
    if (f.good) CHECK(shared_error.empty());
  }
  // The header itself is broken in these: the Huffman table, broken.png's IHDR.
  CHECK(refused == 2);
}

TEST_CASE("a fatal JPEG error after a warning throws, naming the file and both messages") {
  if (!have_pillow_images()) return;
  ImageDecoder decoder;
  const Bytes hopper = pillow_file("hopper.jpg");
  const std::string error = decode_error(decoder, extraneous_bytes(without_table_0(hopper)), "fatal.jpg");
  CHECK_THAT(error, StartsWith("fatal.jpg: corrupt JPEG: "));
  CHECK_THAT(error, Contains("Quantization table 0x00 was not defined"));
  CHECK_THAT(error, Contains("extraneous bytes before marker 0xdb"));
  CHECK_THAT(decode_error(decoder, without_table_0(hopper), "q.jpg"), Contains("Quantization table 0x00"));
}

TEST_CASE("JPEG warnings: truncation is an error, other warnings decode as PIL does, strict refuses all") {
  if (!have_pillow_images()) return;
  ImageDecoder decoder;
  const Bytes hopper = pillow_file("hopper.jpg");
  const OwnedImage clean = own(decoder.decode(hopper.data(), hopper.size(), "hopper.jpg").image);

  // Stray bytes before a marker: libjpeg skips them; the same pixels.
  const Bytes stray = extraneous_bytes(hopper);
  CHECK(same_pixels(clean.image, decoder.decode(stray.data(), stray.size(), "stray.jpg").image));
  CHECK(decoder.info(stray.data(), stray.size(), "stray.jpg").width == 128);
  const std::string strict_error = decode_error(decoder, stray, "stray.jpg", {.strict = true});
  CHECK_THAT(strict_error, StartsWith("stray.jpg: JPEG warning"));
  CHECK_THAT(strict_error, Contains("extraneous bytes"));
  CHECK_THROWS_WITH(decoder.info(stray.data(), stray.size(), "stray.jpg", DecodeOptions{.strict = true}),
                    StartsWith("stray.jpg: JPEG warning"));
  CHECK(decode_error(decoder, hopper, "hopper.jpg", {.strict = true}).empty());

  // Data that ends early, even by the end-of-image marker only (PIL: "image
  // file is truncated").
  for (const std::size_t size : {hopper.size() / 2, hopper.size() - 2}) {
    INFO(size);
    for (const bool strict : {false, true}) {
      CHECK_THAT(decode_error(decoder, cut(hopper, size), "cut.jpg", {.strict = strict}),
                 StartsWith("cut.jpg: truncated JPEG: Premature end of JPEG file"));
    }
  }
  // Bytes after the end-of-image marker are not looked at.
  Bytes trailing = hopper;
  trailing.insert(trailing.end(), {1, 2, 3, 4});
  CHECK(same_pixels(clean.image, decoder.decode(trailing.data(), trailing.size(), "t.jpg").image));
}

TEST_CASE("a JPEG with more than 500 progressive scans is refused") {
  if (!have_pillow_images() || !have_program("/usr/bin/jpegtran", "libjpeg-turbo-progs")) return;
  TempDir dir;
  write_bytes(dir.file("in.jpg"), pillow_file("hopper.jpg"));
  REQUIRE(shell("/usr/bin/jpegtran -progressive " + dir.file("in.jpg") + " > " + dir.file("p.jpg")));
  const Bytes progressive = read_bytes(dir.file("p.jpg"));
  // Its first scan (SOS segment and entropy data) repeated 600 times: libjpeg
  // reads each again, warning of an inconsistent progression.
  const std::size_t sos = find_segment(progressive, 0xDA);
  REQUIRE(sos != 0);
  std::size_t end = sos + 2 + ((progressive[sos + 2] << 8) | progressive[sos + 3]);
  while (!(progressive[end] == 0xFF && progressive[end + 1] != 0 && (progressive[end + 1] & 0xF8) != 0xD0)) ++end;
  Bytes many(progressive.begin(), progressive.begin() + static_cast<std::ptrdiff_t>(end));
  for (int i = 0; i < 600; ++i) many.insert(many.end(), progressive.begin() + sos, progressive.begin() + end);
  many.insert(many.end(), progressive.begin() + end, progressive.end());
  ImageDecoder decoder;
  CHECK(decode_error(decoder, progressive, "p.jpg").empty());
  CHECK_THAT(decode_error(decoder, many, "many.jpg"), StartsWith("many.jpg: corrupt JPEG: more than 500 progressive scans"));
}
