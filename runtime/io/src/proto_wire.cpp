#include "proto_wire.h"

#include <array>
#include <cstring>

#include "sluice/error.h"

namespace sluice::io::detail {

std::string_view wire_type_name(WireType type) {
  switch (type) {
    case WireType::varint: return "varint";
    case WireType::fixed64: return "64-bit";
    case WireType::len: return "length-delimited";
    case WireType::group_start: return "group start";
    case WireType::group_end: return "group end";
    case WireType::fixed32: return "32-bit";
  }
  return "unknown";
}

void put_varint(std::string& out, std::uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

void put_len_field(std::string& out, std::uint32_t field, std::string_view body) {
  put_varint(out, static_cast<std::uint64_t>(field) << 3 | static_cast<std::uint64_t>(WireType::len));
  put_varint(out, body.size());
  out.append(body);
}

void WireReader::fail(const std::string& message, std::size_t offset) const {
  throw Error(std::string(what_) + ": " + message + " at byte " + std::to_string(offset));
}

void WireReader::wrong_type(const WireField& field, std::string_view part, WireType expected) const {
  fail(std::string(part) + " (field " + std::to_string(field.number) + ") has wire type " +
           std::string(wire_type_name(field.type)) + ", not " + std::string(wire_type_name(expected)),
       base_ + field.offset);
}

// At most 10 bytes, as protobuf writes them; an 11th is an error, not a
// value wrapped round. Bits past the 64th (the 10th byte's upper six) are
// dropped, as protobuf's own parser does.
std::uint64_t WireReader::raw_varint(std::string_view part) {
  const std::size_t start = at_;
  std::uint64_t v = 0;
  for (int shift = 0; shift < 70; shift += 7) {
    if (at_ >= bytes_.size()) fail("truncated varint in " + std::string(part), base_ + start);
    const auto b = static_cast<std::uint8_t>(bytes_[at_++]);
    v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
    if (!(b & 0x80)) return v;
  }
  fail("varint longer than 10 bytes in " + std::string(part), base_ + start);
}

std::uint64_t WireReader::varint(std::string_view part) { return raw_varint(part); }

WireField WireReader::next() {
  WireField f;
  f.offset = at_;
  const std::uint64_t tag = raw_varint("a field tag");
  const auto type = static_cast<std::uint8_t>(tag & 7);
  if (tag >> 3 == 0 || tag >> 3 > 0x1fffffff)
    fail("field number " + std::to_string(tag >> 3) + " (tag " + std::to_string(tag) + ") is not a valid one",
         base_ + f.offset);
  if (type > 5) fail("wire type " + std::to_string(type) + " does not exist", base_ + f.offset);
  f.number = static_cast<std::uint32_t>(tag >> 3);
  f.type = static_cast<WireType>(type);
  if (f.type == WireType::group_end)
    fail("group end (field " + std::to_string(f.number) + ") with no group open", base_ + f.offset);
  return f;
}

std::uint32_t WireReader::fixed32(std::string_view part) {
  if (bytes_.size() - at_ < 4) fail("truncated 32-bit value in " + std::string(part), base_ + at_);
  std::uint32_t v;
  std::memcpy(&v, bytes_.data() + at_, 4);  // little-endian hosts only, as the rest of the format code
  at_ += 4;
  return v;
}

std::span<const std::byte> WireReader::len(std::string_view part) {
  const std::size_t start = at_;
  const std::uint64_t n = raw_varint(part);
  if (n > bytes_.size() - at_)
    fail(std::string(part) + " says " + std::to_string(n) + " bytes but " + std::to_string(bytes_.size() - at_) +
             " remain",
         base_ + start);
  const auto out = bytes_.subspan(at_, static_cast<std::size_t>(n));
  at_ += static_cast<std::size_t>(n);
  return out;
}

void WireReader::skip(const WireField& field) {
  // Groups nest; their numbers are kept on a fixed stack, as deep as
  // protobuf's own recursion limit.
  std::array<std::uint32_t, 100> open{};
  std::size_t depth = 0;
  WireField f = field;
  for (;;) {
    switch (f.type) {
      case WireType::varint: raw_varint("an unknown field"); break;
      case WireType::fixed64:
        if (bytes_.size() - at_ < 8) fail("truncated 64-bit value in an unknown field", base_ + at_);
        at_ += 8;
        break;
      case WireType::fixed32: fixed32("an unknown field"); break;
      case WireType::len: len("an unknown field"); break;
      case WireType::group_start:
        if (depth == open.size()) fail("groups nested over 100 deep", base_ + f.offset);
        open[depth++] = f.number;
        break;
      case WireType::group_end:
        if (depth == 0 || open[depth - 1] != f.number)
          fail("group end (field " + std::to_string(f.number) + ") does not close the open group",
               base_ + f.offset);
        --depth;
        break;
    }
    if (depth == 0) return;
    if (done()) fail("group (field " + std::to_string(open[depth - 1]) + ") not closed", base_ + at_);
    // Inside a group a group end is expected: read the tag by hand.
    f.offset = at_;
    const std::uint64_t tag = raw_varint("a field tag");
    if (tag >> 3 == 0 || tag >> 3 > 0x1fffffff || (tag & 7) > 5)
      fail("tag " + std::to_string(tag) + " is not a valid one", base_ + f.offset);
    f.number = static_cast<std::uint32_t>(tag >> 3);
    f.type = static_cast<WireType>(tag & 7);
  }
}

}  // namespace sluice::io::detail
