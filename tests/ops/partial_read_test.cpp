// What a JPEG decode leaves unread (see jpeg_markers.h): a progressive JPEG
// at 1/8 read without its luma AC scans, and a region of a baseline JPEG read
// no further than its last row, give the pixels of reading everything
// (DecodeOptions::strict reads everything; djpeg is the outside reference)
// and fail wherever reading everything would fail.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "sluice/ops/decode.h"
#include "sluice/ops/geometry.h"
#include "test_images.h"

using namespace sluice::ops;
using namespace sluice::ops::test;

namespace {

// The pixels of a non-strict decode (which may leave scans or rows unread)
// and of a strict one (which reads every byte), compared.
void check_same_as_reading_all(const std::vector<std::uint8_t>& f, const std::string& name, DecodeOptions options) {
  ImageDecoder fast, full;
  options.strict = false;
  const DecodedImage a = fast.decode(f.data(), f.size(), name, options);
  options.strict = true;
  const DecodedImage b = full.decode(f.data(), f.size(), name, options);
  CHECK(a.region.x == b.region.x);
  CHECK(a.region.y == b.region.y);
  CHECK(same_pixels(a.image, b.image));
}

std::vector<DecodeOptions> cases() {
  std::vector<DecodeOptions> out;
  for (const double scale : {0.125, 0.25, 1.0}) {
    for (const int channels : {1, 3, 4}) out.push_back({.channels = channels, .scale = scale});
    for (const Rect r : {Rect{0, 0, 480, 40}, Rect{100, 8, 200, 100}, Rect{0, 300, 480, 60}, Rect{9, 17, 1, 1}}) {
      out.push_back({.scale = scale, .region = r});
    }
  }
  return out;
}

}  // namespace

TEST_CASE("a JPEG read in part decodes to the pixels of reading all of it, at every scale and region") {
  Cjpeg cjpeg;
  if (!cjpeg.ready()) return;
  for (const char* args : {"-progressive -sample 1x1,1x1,1x1", "-progressive -sample 2x2,1x1,1x1",
                           "-progressive -sample 2x1,1x1,1x1", "-progressive -sample 1x2,1x1,1x1",
                           "-progressive -restart 1", "-progressive -grayscale", "-sample 2x2,1x1,1x1",
                           "-sample 1x1,1x1,1x1 -restart 2", "-grayscale", "-optimize"}) {
    const auto f = cjpeg.encode(std::string("-quality 85 ") + args);
    for (const DecodeOptions& options : cases()) {
      INFO("cjpeg " << args << " at " << options.scale << ", " << options.channels << " channels, region "
                    << (options.region ? options.region->y : -1));
      check_same_as_reading_all(f, "f.jpg", options);
    }
  }
  const auto unfinished = cjpeg.encode("-quality 85 -progressive", kUnfinishedProgression);
  for (const DecodeOptions& options : cases()) check_same_as_reading_all(unfinished, "unfinished.jpg", options);
  for (const char* file : {"app13-multiple.jpg", "icc_profile_big.jpg", "flower2.jpg", "hopper.jpg"}) {
    INFO(file);
    check_same_as_reading_all(pillow_file(file), file, {.scale = 0.125});
    check_same_as_reading_all(pillow_file(file), file, {.scale = 0.125, .region = Rect{8, 8, 40, 40}});
  }
}

TEST_CASE("a progressive JPEG at 1/8 decodes as djpeg -scale 1/8 does") {
  Cjpeg cjpeg;
  if (!cjpeg.ready() || !have_program("/usr/bin/djpeg", "libjpeg-turbo-progs")) return;
  for (const char* sampling : {"1x1,1x1,1x1", "2x2,1x1,1x1", "2x1,1x1,1x1"}) {
    INFO("sampling " << sampling);
    write_bytes(cjpeg.file("p.jpg"), cjpeg.encode(std::string("-quality 85 -progressive -sample ") + sampling));
    REQUIRE(shell("/usr/bin/djpeg -scale 1/8 -ppm " + cjpeg.file("p.jpg") + " > " + cjpeg.file("p.ppm")));
    const Pnm reference = read_pnm(cjpeg.file("p.ppm"));
    const auto f = read_bytes(cjpeg.file("p.jpg"));
    ImageDecoder decoder;
    const DecodedImage d = decoder.decode(f.data(), f.size(), "p.jpg", {.scale = 0.125});
    REQUIRE(d.image.width == reference.width);
    REQUIRE(d.image.height == reference.height);
    CHECK(same_pixels(d.image, packed_image(const_cast<std::uint8_t*>(reference.pixels.data()), reference.height,
                                            reference.width, 3)));
  }
}

TEST_CASE("a JPEG cut short fails at 1/8 and in a region exactly as when read whole") {
  Cjpeg cjpeg;
  if (!cjpeg.ready()) return;
  for (const char* args : {"-progressive", "-progressive -sample 1x1,1x1,1x1", ""}) {
    const auto f = cjpeg.encode(std::string("-quality 85 ") + args);
    ImageDecoder decoder;
    for (std::size_t keep = 400; keep < f.size(); keep += 173) {
      const std::vector<std::uint8_t> cut(f.begin(), f.begin() + static_cast<std::ptrdiff_t>(keep));
      const std::string whole = decode_error(decoder, cut, "cut.jpg");
      INFO("cjpeg " << args << ", kept " << keep << " of " << f.size() << ": " << whole);
      CHECK(whole.rfind("cut.jpg: ", 0) == 0);
      CHECK(decode_error(decoder, cut, "cut.jpg", {.scale = 0.125}) == whole);
      CHECK(decode_error(decoder, cut, "cut.jpg", {.scale = 0.125, .region = Rect{0, 0, 16, 16}}) == whole);
      CHECK(decode_error(decoder, cut, "cut.jpg", {.region = Rect{0, 0, 480, 8}}) == whole);
    }
  }
}

namespace {

struct Span {
  std::size_t begin, end;
};

// The first luma AC scan of a cjpeg progressive file: its SOS marker, and
// where the next marker starts.
Span first_luma_ac_scan(const std::vector<std::uint8_t>& f) {
  const std::vector<Sos> sos = scans_of(f);
  for (std::size_t i = 0; i + 1 < sos.size(); ++i) {
    if (sos[i].ss > 0 && sos[i].first_id == 1) {
      std::size_t end = sos[i].at + 10;
      while (!(f[end] == 0xFF && f[end + 1] != 0x00 && (f[end + 1] < 0xD0 || f[end + 1] > 0xD7))) ++end;
      return {sos[i].at, end};
    }
  }
  FAIL("no luma AC scan");
  return {};
}

// `count` bytes of entropy-coded data from `at` replaced by others, none 0xFF.
std::vector<std::uint8_t> damaged(std::vector<std::uint8_t> f, std::size_t at, std::size_t count) {
  for (std::size_t i = at; i < at + count; ++i) f[i] = static_cast<std::uint8_t>(i * 37 % 255);
  return f;
}

}  // namespace

TEST_CASE("damage in a skipped scan changes nothing a 1/8 decode returns, and errors read as in a whole read") {
  Cjpeg cjpeg;
  if (!cjpeg.ready() || !have_program("/usr/bin/djpeg", "libjpeg-turbo-progs")) return;
  const auto f = cjpeg.encode("-quality 85 -progressive -sample 1x1,1x1,1x1");
  const Span scan = first_luma_ac_scan(f);
  REQUIRE(scan.end - scan.begin > 200);
  const auto bad = damaged(f, scan.begin + 100, 64);
  // djpeg (the same libjpeg, reading everything, warnings ignored) is the reference.
  write_bytes(cjpeg.file("bad.jpg"), bad);
  shell("/usr/bin/djpeg -scale 1/8 -ppm " + cjpeg.file("bad.jpg") + " > " + cjpeg.file("bad.ppm") + " 2>/dev/null");
  const Pnm reference = read_pnm(cjpeg.file("bad.ppm"));
  REQUIRE(reference.width == 60);
  ImageDecoder decoder;
  const DecodedImage d = decoder.decode(bad.data(), bad.size(), "bad.jpg", {.scale = 0.125});
  CHECK(same_pixels(d.image, packed_image(const_cast<std::uint8_t*>(reference.pixels.data()), reference.height,
                                          reference.width, 3)));
  CHECK(decode_error(decoder, bad, "bad.jpg", {.scale = 0.125, .strict = true}).rfind("bad.jpg: JPEG warning", 0) == 0);
  // A fatal error after the damaged scan names the warning the damage gave,
  // as reading everything does.
  std::vector<std::uint8_t> fatal = bad;
  std::vector<std::uint8_t> bogus_dqt = {0xFF, 0xDB, 0x00, 0x43, 0x07};
  bogus_dqt.resize(bogus_dqt.size() + 64, 1);
  fatal.insert(fatal.begin() + static_cast<std::ptrdiff_t>(scan.end), bogus_dqt.begin(), bogus_dqt.end());
  const std::string whole = decode_error(decoder, fatal, "fatal.jpg");
  INFO(whole);
  CHECK(whole.find("(after the warning: ") != std::string::npos);
  CHECK(decode_error(decoder, fatal, "fatal.jpg", {.scale = 0.125}) == whole);
  CHECK(decode_error(decoder, fatal, "fatal.jpg", {.scale = 0.125, .region = Rect{0, 0, 8, 8}}) == whole);
}

TEST_CASE("a region of a baseline JPEG is read past its last row when what follows is not plain") {
  Cjpeg cjpeg;
  if (!cjpeg.ready()) return;
  const auto f = cjpeg.encode("-quality 85");
  auto with_before_end = [&f](std::vector<std::uint8_t> segment) {
    std::vector<std::uint8_t> b(f.begin(), f.end() - 2);
    b.insert(b.end(), segment.begin(), segment.end());
    b.insert(b.end(), {0xFF, 0xD9});
    return b;
  };
  const std::size_t sos = find_segment(f, 0xDA);
  REQUIRE(sos != 0);
  ImageDecoder decoder;
  const DecodeOptions top{.region = Rect{0, 0, 480, 16}};
  // A second scan in a single-scan file: an error, also for a region above it.
  const auto two_scans = with_before_end(std::vector<std::uint8_t>(f.begin() + static_cast<std::ptrdiff_t>(sos),
                                                                   f.begin() + static_cast<std::ptrdiff_t>(sos) + 14));
  const std::string error = decode_error(decoder, two_scans, "two.jpg");
  INFO(error);
  CHECK(error.rfind("two.jpg: corrupt JPEG", 0) == 0);
  CHECK(decode_error(decoder, two_scans, "two.jpg", top) == error);
  // A table, a comment, bytes after the end: read or passed over, the same pixels.
  const std::vector<std::uint8_t> dqt = {0xFF, 0xDB, 0x00, 0x43, 0x00};
  std::vector<std::uint8_t> table = dqt;
  table.resize(dqt.size() + 64, 1);
  for (const auto& b : {with_before_end(table), with_before_end({0xFF, 0xFE, 0x00, 0x04, 'h', 'i'})}) {
    check_same_as_reading_all(b, "b.jpg", top);
  }
  // A marker inside the region's data, whose length field looks like the
  // marker again: libjpeg has read the marker, and its length runs past the end.
  const std::size_t data = sos + 14;
  for (const std::uint8_t marker : {std::uint8_t{0xE1}, std::uint8_t{0xFE}}) {
    std::vector<std::uint8_t> b = f;
    const std::vector<std::uint8_t> inserted = {0xFF, marker, 0xFF, marker, 0x00, 0x04, 0x00, 0x00};
    b.insert(b.begin() + static_cast<std::ptrdiff_t>(data + 40), inserted.begin(), inserted.end());
    const std::string e = decode_error(decoder, b, "m.jpg");
    INFO(e);
    CHECK(e.rfind("m.jpg: ", 0) == 0);
    CHECK(decode_error(decoder, b, "m.jpg", top) == e);
  }
  // Damage in the data below the region: libjpeg warns, so a decode that
  // stops above it has what reading everything has there; strict fails both.
  const auto below = damaged(f, f.size() * 3 / 4, 64);
  ImageDecoder whole_decoder;
  const DecodedImage whole = whole_decoder.decode(below.data(), below.size(), "d.jpg");
  const DecodedImage part = decoder.decode(below.data(), below.size(), "d.jpg", top);
  CHECK(same_pixels(part.image, crop(whole.image, part.region)));
  const std::string strict = decode_error(decoder, below, "d.jpg", {.strict = true});
  CHECK(strict.rfind("d.jpg: JPEG warning", 0) == 0);
  CHECK(decode_error(decoder, below, "d.jpg", {.strict = true, .region = top.region}) == strict);
}
