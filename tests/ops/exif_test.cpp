// EXIF Orientation of every integer type and both byte orders, in a JPEG's
// APP1 segment and in a PNG's eXIf chunk (before or after the image data).
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "sluice/ops/decode.h"
#include "test_images.h"

using namespace sluice::ops;
using namespace sluice::ops::test;

namespace {

using Bytes = std::vector<std::uint8_t>;

enum : std::uint16_t { kByte = 1, kShort = 3, kLong = 4, kSignedByte = 6, kSignedShort = 8, kSignedLong = 9 };

void put(Bytes& out, std::uint32_t value, int bytes, bool little) {
  for (int i = 0; i < bytes; ++i) out.push_back(value >> (8 * (little ? i : bytes - 1 - i)));
}

// A TIFF block whose one IFD entry is Orientation = value, stored as `type`.
Bytes tiff_with_orientation(bool little, std::uint16_t type, std::uint32_t value) {
  Bytes t = little ? Bytes{'I', 'I', 42, 0} : Bytes{'M', 'M', 0, 42};
  put(t, 8, 4, little);       // first IFD
  put(t, 1, 2, little);       // one entry
  put(t, 0x0112, 2, little);  // Orientation
  put(t, type, 2, little);
  put(t, 1, 4, little);       // count
  const int size = type == kByte || type == kSignedByte ? 1 : type == kShort || type == kSignedShort ? 2 : 4;
  put(t, value, size, little);  // left-justified in the 4-byte value field
  t.resize(t.size() + 4 - size, 0);
  put(t, 0, 4, little);  // no next IFD
  return t;
}

Bytes jpeg_with_exif(const Bytes& jpeg, const Bytes& tiff) {
  Bytes app1 = {0xFF, 0xE1};
  put(app1, static_cast<std::uint32_t>(2 + 6 + tiff.size()), 2, false);
  app1.insert(app1.end(), {'E', 'x', 'i', 'f', 0, 0});
  app1.insert(app1.end(), tiff.begin(), tiff.end());
  Bytes out(jpeg.begin(), jpeg.begin() + 2);  // SOI
  out.insert(out.end(), app1.begin(), app1.end());
  out.insert(out.end(), jpeg.begin() + 2, jpeg.end());
  return out;
}

// `png` with an eXIf chunk after IHDR, or before IEND when after_image.
Bytes png_with_exif(const Bytes& png, const Bytes& tiff, bool after_image) {
  Bytes chunk;
  put(chunk, static_cast<std::uint32_t>(tiff.size()), 4, false);
  chunk.insert(chunk.end(), {'e', 'X', 'I', 'f'});
  chunk.insert(chunk.end(), tiff.begin(), tiff.end());
  put(chunk, crc32(chunk.data() + 4, chunk.size() - 4), 4, false);
  const std::size_t at = after_image ? png.size() - 12 : 8 + 25;  // before IEND / after IHDR
  Bytes out(png.begin(), png.begin() + static_cast<std::ptrdiff_t>(at));
  out.insert(out.end(), chunk.begin(), chunk.end());
  out.insert(out.end(), png.begin() + static_cast<std::ptrdiff_t>(at), png.end());
  return out;
}

// Orientation 6 (rotate 90 degrees clockwise): shown(x, y) = stored(y, H-1-x).
bool rotated_clockwise(const Image& shown, const Image& stored) {
  if (shown.width != stored.height || shown.height != stored.width) return false;
  for (int y = 0; y < shown.height; y += 7) {
    for (int x = 0; x < shown.width; x += 5) {
      const std::uint8_t* a = shown.row<std::uint8_t>(y) + 3 * x;
      const std::uint8_t* b = stored.row<std::uint8_t>(stored.height - 1 - x) + 3 * y;
      if (a[0] != b[0] || a[1] != b[1] || a[2] != b[2]) return false;
    }
  }
  return true;
}

}  // namespace

TEST_CASE("EXIF orientation is read from every integer type, both byte orders, JPEG and PNG eXIf") {
  if (!have_pillow_images()) return;
  ImageDecoder decoder;
  const Bytes jpeg = pillow_file("hopper.jpg"), png = pillow_file("hopper.png");
  const OwnedImage jpeg_stored = own(decoder.decode(jpeg.data(), jpeg.size(), "hopper.jpg").image);
  const OwnedImage png_stored = own(decoder.decode(png.data(), png.size(), "hopper.png").image);
  for (const bool little : {true, false}) {
    for (const std::uint16_t type : {kByte, kShort, kLong, kSignedByte, kSignedShort, kSignedLong}) {
      INFO((little ? "II" : "MM") << " type " << type);
      const Bytes tiff = tiff_with_orientation(little, type, 6);
      struct Case {
        const char* name;
        Bytes bytes;
        const Image& stored;
      };
      const Case cases[] = {{"exif.jpg", jpeg_with_exif(jpeg, tiff), jpeg_stored.image},
                            {"exif_first.png", png_with_exif(png, tiff, false), png_stored.image},
                            {"exif_last.png", png_with_exif(png, tiff, true), png_stored.image}};
      for (const Case& c : cases) {
        INFO(c.name);
        CHECK(decoder.info(c.bytes.data(), c.bytes.size(), c.name, true).orientation == 6);
        CHECK(decoder.info(c.bytes.data(), c.bytes.size(), c.name, false).orientation == 1);
        const DecodedImage d = decoder.decode(c.bytes.data(), c.bytes.size(), c.name, {.apply_exif_orientation = true});
        CHECK(d.info.orientation == 6);
        CHECK(rotated_clockwise(d.image, c.stored));
      }
    }
    // Out of range as the type reads it: no orientation.
    for (const auto& [type, value] : {std::pair{kSignedLong, 0xFFFFFFFAu}, std::pair{kLong, 0x00010006u},
                                      std::pair{kSignedShort, 0xFFFAu}, std::pair{kShort, 9u}}) {
      const Bytes bytes = jpeg_with_exif(jpeg, tiff_with_orientation(little, type, value));
      CHECK(decoder.info(bytes.data(), bytes.size(), "odd.jpg", true).orientation == 1);
    }
  }
  // Pillow's exif.png: an eXIf chunk after the image data, Orientation 1 (SHORT).
  const Bytes real = pillow_file("exif.png");
  CHECK(decoder.info(real.data(), real.size(), "exif.png", true).orientation == 1);
}
