// jpeg_markers (a private header of the decoder): on JPEGs made by cjpeg, the
// scans a 1/8 decode may leave out are exactly the AC scans of the DC-only
// components, and a file cut short, with a progression left unfinished, or
// with a scan header libjpeg would refuse, gives nothing to leave out; the
// rest of a single-scan JPEG is "plain" only up to a clean end.
#include <catch2/catch.hpp>

#include <string>
#include <utility>
#include <vector>

#include "jpeg_markers.h"
#include "test_images.h"

using namespace sluice::ops;
using namespace sluice::ops::test;

namespace {

std::vector<ByteRange> skippable(const std::vector<std::uint8_t>& f, std::uint32_t dc_only, bool expect) {
  std::vector<ByteRange> out{{1, 2}};
  CHECK(jpeg_skippable_scans(f, dc_only, 500, out) == expect);
  if (!expect) CHECK(out.empty());
  return out;
}

}  // namespace

TEST_CASE("the scans a 1/8 decode may leave out are the AC scans of its DC-only components") {
  Cjpeg cjpeg;
  if (!cjpeg.ready()) return;
  for (const char* args : {"-progressive -sample 1x1,1x1,1x1", "-progressive -sample 2x2,1x1,1x1",
                           "-progressive -sample 2x1,1x1,1x1", "-progressive -grayscale",
                           "-progressive -restart 1 -sample 2x2,1x1,1x1"}) {
    INFO("cjpeg " << args);
    const auto f = cjpeg.encode(std::string("-quality 90 ") + args);
    const std::vector<Sos> sos = scans_of(f);
    const int components = sos.front().components;
    for (std::uint32_t dc_only = 0; dc_only < (1u << components); ++dc_only) {
      INFO("dc_only " << dc_only);
      const std::vector<ByteRange> ranges = skippable(f, dc_only, true);
      std::size_t next = 0, skipped = 0;
      for (const Sos& s : sos) {
        if (s.ss == 0 || (dc_only & (1u << (s.first_id - 1))) == 0) continue;  // cjpeg numbers ids from 1
        REQUIRE(next < ranges.size());
        const ByteRange r = ranges[next++];
        CHECK(r.begin == s.at);
        // It ends where the next marker starts: not a stuffed byte, not a restart.
        REQUIRE(r.end + 1 < f.size());
        CHECK(f[r.end] == 0xFF);
        CHECK((f[r.end + 1] != 0x00 && (f[r.end + 1] < 0xD0 || f[r.end + 1] > 0xD7)));
        CHECK(r.end > r.begin + 10);
        skipped += r.end - r.begin;
      }
      CHECK(next == ranges.size());
      // The luma AC scans are most of a photo's bytes.
      if (dc_only & 1u) CHECK(skipped > f.size() / 2);
    }
  }
}

TEST_CASE("nothing is left out of a JPEG cut short, unfinished or with a scan libjpeg refuses") {
  Cjpeg cjpeg;
  if (!cjpeg.ready()) return;
  const auto f = cjpeg.encode("-quality 90 -progressive");
  skippable(f, 1, true);
  for (std::size_t keep = 0; keep < f.size(); keep += 97) {
    INFO("kept " << keep << " of " << f.size() << " bytes");
    skippable(std::vector<std::uint8_t>(f.begin(), f.begin() + static_cast<std::ptrdiff_t>(keep)), 1, false);
  }
  skippable(std::vector<std::uint8_t>(f.begin(), f.end() - 2), 1, false);  // the end marker alone missing
  skippable(cjpeg.encode("-quality 90 -progressive", kUnfinishedProgression), 1, false);
  skippable(cjpeg.encode("-quality 90"), 1, false);  // baseline: no SOF2

  const std::vector<Sos> sos = scans_of(f);
  const Sos* luma_ac = nullptr;
  for (const Sos& s : sos) {
    if (s.ss > 0 && s.first_id == 1 && luma_ac == nullptr) luma_ac = &s;
  }
  REQUIRE(luma_ac != nullptr);
  const std::size_t tables = luma_ac->at + 6;                // (id, DC/AC tables) of its one component
  const std::size_t approximation = luma_ac->at + 9;         // Ah/Al
  auto broken = [&f](std::size_t at, std::uint8_t value) {
    std::vector<std::uint8_t> b = f;
    b[at] = value;
    return b;
  };
  skippable(broken(tables, static_cast<std::uint8_t>((f[tables] & 0xF0) | 3)), 1, false);  // an AC table never defined
  skippable(broken(approximation, 14), 1, false);                                           // Al > 13
  skippable(broken(luma_ac->at + 5, 9), 1, false);                                          // no component 9
  skippable(broken(luma_ac->at + 8, 64), 1, false);                                         // Se past 63
  skippable(broken(sos.front().at + 7, f[sos.front().at + 5]), 1, false);  // one component twice in a scan
  // The Huffman table the luma AC scan uses (cjpeg writes one before each
  // scan): an impossible index, or code lengths that run out of codes.
  std::size_t dht = luma_ac->at;
  while (!(f[dht] == 0xFF && f[dht + 1] == 0xC4)) --dht;
  skippable(broken(dht + 4, 0x25), 1, false);
  std::vector<std::uint8_t> overfull = f;
  int symbols = 0;
  for (int i = 0; i < 16; ++i) symbols += std::exchange(overfull[dht + 5 + i], 0);
  REQUIRE(symbols > 2);
  overfull[dht + 5] = 2;  // two codes of one bit: the all-ones code taken
  overfull[dht + 20] = static_cast<std::uint8_t>(symbols - 2);
  skippable(overfull, 1, false);
  // A second frame header before the end.
  std::vector<std::uint8_t> two_frames(f.begin(), f.end() - 2);
  two_frames.insert(two_frames.end(), {0xFF, 0xC0, 0x00, 0x0B, 8, 0, 16, 0, 16, 1, 1, 0x11, 0, 0xFF, 0xD9});
  skippable(two_frames, 1, false);
  // More scans than allowed.
  std::vector<ByteRange> out;
  CHECK(!jpeg_skippable_scans(f, 1, static_cast<int>(sos.size()) - 1, out));
  CHECK(jpeg_skippable_scans(f, 1, static_cast<int>(sos.size()), out));
}

TEST_CASE("the rest of a single-scan JPEG is plain up to a clean end only") {
  Cjpeg cjpeg;
  if (!cjpeg.ready()) return;
  for (const char* args : {"-quality 90", "-quality 90 -restart 1"}) {
    INFO("cjpeg " << args);
    const auto f = cjpeg.encode(args);
    const std::vector<Sos> sos = scans_of(f);
    REQUIRE(sos.size() == 1);
    const std::size_t data = sos[0].at + 2 + 12;  // FF DA, then 12 bytes of header for 3 components
    for (std::size_t pos = data; pos < f.size(); pos += 211) {
      INFO("from " << pos);
      CHECK(jpeg_rest_is_plain(f, pos, 0));
      CHECK(!jpeg_rest_is_plain(std::vector<std::uint8_t>(f.begin(), f.end() - 1), pos, 0));
    }
    const std::size_t eoi = f.size() - 2;
    CHECK(jpeg_rest_is_plain(f, eoi, 0));
    CHECK(jpeg_rest_is_plain(f, f.size(), 0xD9));  // libjpeg has read the end marker
    CHECK(!jpeg_rest_is_plain(f, eoi, 0xD9));      // a marker read is one just before pos
    CHECK(!jpeg_rest_is_plain(f, f.size(), 0));
    CHECK(!jpeg_rest_is_plain(f, f.size() + 1, 0));

    auto with_before_end = [&f](std::vector<std::uint8_t> segment) {
      std::vector<std::uint8_t> b(f.begin(), f.end() - 2);
      b.insert(b.end(), segment.begin(), segment.end());
      b.insert(b.end(), {0xFF, 0xD9});
      return b;
    };
    CHECK(jpeg_rest_is_plain(with_before_end({0xFF, 0xFE, 0x00, 0x05, 'a', 'b', 'c'}), data, 0));  // COM
    CHECK(jpeg_rest_is_plain(with_before_end({0xFF, 0xE1, 0x00, 0x02}), data, 0));                 // APP1
    CHECK(!jpeg_rest_is_plain(with_before_end({0xFF, 0xFE, 0x00, 0x01}), data, 0));  // impossible length
    CHECK(!jpeg_rest_is_plain(with_before_end({0xFF, 0xFE, 0x00, 0x09}), data, 0));  // runs past the end
    CHECK(!jpeg_rest_is_plain(with_before_end({0xFF, 0xDB, 0x00, 0x02}), data, 0));  // DQT: libjpeg reads it
    std::vector<std::uint8_t> second_scan(f.begin() + static_cast<std::ptrdiff_t>(sos[0].at),
                                            f.begin() + static_cast<std::ptrdiff_t>(data));
    CHECK(!jpeg_rest_is_plain(with_before_end(second_scan), data, 0));
    // Bytes after the end marker are not read, by libjpeg nor here.
    std::vector<std::uint8_t> trailing = f;
    trailing.insert(trailing.end(), {0x12, 0xFF, 0xDA, 0x00});
    CHECK(jpeg_rest_is_plain(trailing, data, 0));
  }
}
