#include "exif.h"

#include <cstring>

namespace sluice::ops {
namespace {

constexpr std::uint16_t kOrientationTag = 0x0112;

// TIFF field types that hold an integer.
enum : std::uint16_t { kByte = 1, kShort = 3, kLong = 4, kSignedByte = 6, kSignedShort = 8, kSignedLong = 9 };

}  // namespace

int exif_orientation(const std::uint8_t* p, std::size_t size) {
  if (size < 8) return 1;
  bool little;
  if (p[0] == 'I' && p[1] == 'I') {
    little = true;
  } else if (p[0] == 'M' && p[1] == 'M') {
    little = false;
  } else {
    return 1;
  }
  auto u16 = [&](std::size_t at) -> std::uint32_t {
    return little ? p[at] | (p[at + 1] << 8) : (p[at] << 8) | p[at + 1];
  };
  auto u32 = [&](std::size_t at) -> std::uint32_t {
    return little ? u16(at) | (u16(at + 2) << 16) : (u16(at) << 16) | u16(at + 2);
  };
  if (u16(2) != 42) return 1;
  const std::uint32_t ifd = u32(4);
  if (ifd > size - 2) return 1;
  const std::uint32_t count = u16(ifd);
  for (std::uint32_t i = 0; i < count; ++i) {
    const std::size_t entry = ifd + 2 + static_cast<std::size_t>(i) * 12;
    if (entry + 12 > size) return 1;
    if (u16(entry) == kOrientationTag) {
      // One value of up to 4 bytes sits in the entry itself, left-justified.
      if (u32(entry + 4) < 1) return 1;
      std::int64_t value;
      switch (u16(entry + 2)) {
        case kByte: value = p[entry + 8]; break;
        case kSignedByte: value = static_cast<std::int8_t>(p[entry + 8]); break;
        case kShort: value = u16(entry + 8); break;
        case kSignedShort: value = static_cast<std::int16_t>(u16(entry + 8)); break;
        case kLong: value = u32(entry + 8); break;
        case kSignedLong: value = static_cast<std::int32_t>(u32(entry + 8)); break;
        default: return 1;
      }
      return value >= 1 && value <= 8 ? static_cast<int>(value) : 1;
    }
  }
  return 1;
}

int jpeg_exif_orientation(const std::uint8_t* p, std::size_t size) {
  if (size < 4 || p[0] != 0xFF || p[1] != 0xD8) return 1;
  std::size_t at = 2;
  while (at + 4 <= size) {
    if (p[at] != 0xFF) return 1;
    const std::uint8_t marker = p[at + 1];
    if (marker == 0xFF) {  // fill byte
      ++at;
      continue;
    }
    if (marker == 0xDA || marker == 0xD9) return 1;  // start of scan, end of image
    const std::size_t length = (p[at + 2] << 8) | p[at + 3];
    if (length < 2 || at + 2 + length > size) return 1;
    const std::uint8_t* body = p + at + 4;
    const std::size_t body_size = length - 2;
    if (marker == 0xE1 && body_size > 6 && std::memcmp(body, "Exif\0\0", 6) == 0) {
      return exif_orientation(body + 6, body_size - 6);
    }
    at += 2 + length;
  }
  return 1;
}

int png_exif_orientation(const std::uint8_t* p, std::size_t size) {
  std::size_t at = 8;  // after the signature
  while (at + 12 <= size) {
    const std::size_t length =
        (std::size_t{p[at]} << 24) | (std::size_t{p[at + 1]} << 16) | (std::size_t{p[at + 2]} << 8) | p[at + 3];
    const std::uint8_t* type = p + at + 4;
    if (length > size - at - 12) return 1;
    if (std::memcmp(type, "eXIf", 4) == 0) return exif_orientation(p + at + 8, length);
    if (std::memcmp(type, "IEND", 4) == 0) return 1;
    at += 12 + length;
  }
  return 1;
}

}  // namespace sluice::ops
