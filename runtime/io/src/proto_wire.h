// Internal: protocol buffers' wire format, the primitives tf.train.Example's
// encoder (sample_encoding.cpp) and decoder (example_decoder.cpp) share.
//
// Writing: varints and length-delimited fields appended to a std::string.
//
// Reading: a WireReader walks one message's bytes field by field. Every
// malformed input (a truncated or over-long varint, a length past the end of
// the message, a fixed-width value cut short, a tag with field number 0 or a
// wire type protobuf does not define, an unbalanced group) throws
// sluice::Error whose message starts with the `what` the reader was made with
// (e.g. "malformed tf.train.Example") and says which part and at which byte.
// Nothing is allocated: values are views into the caller's bytes, which must
// outlive the reader.
//
// Thread safety: pure functions; a WireReader is not synchronised.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace sluice::io::detail {

enum class WireType : std::uint8_t { varint = 0, fixed64 = 1, len = 2, group_start = 3, group_end = 4, fixed32 = 5 };

// "varint", "64-bit", "length-delimited", "group start", "group end", "32-bit".
std::string_view wire_type_name(WireType type);

// Appends `v` as a varint (1 to 10 bytes).
void put_varint(std::string& out, std::uint64_t v);
// Appends field `field` as a length-delimited field holding `body`.
void put_len_field(std::string& out, std::uint32_t field, std::string_view body);

struct WireField {
  std::uint32_t number = 0;
  WireType type = WireType::varint;
  std::size_t offset = 0;  // of the tag, from the start of the outermost message
};

class WireReader {
 public:
  // `what` starts every error message and must outlive the reader; `base`
  // is the offset of bytes[0] within the outermost message, for the byte
  // positions errors name.
  WireReader(std::span<const std::byte> bytes, std::string_view what, std::size_t base = 0)
      : bytes_(bytes), what_(what), base_(base) {}
  // A reader of `inner`, a view this reader's len() returned.
  WireReader nested(std::span<const std::byte> inner) const {
    return WireReader(inner, what_, base_ + static_cast<std::size_t>(inner.data() - bytes_.data()));
  }

  bool done() const { return at_ >= bytes_.size(); }
  std::size_t offset() const { return base_ + at_; }

  // The next field's tag. Throws on field number 0, or on a group end (the
  // caller is at a message's top level) or an undefined wire type (6, 7).
  WireField next();
  // The value of a field of type varint, fixed32 / fixed64 (little-endian
  // bits), or len (a view of its bytes, within this message).
  std::uint64_t varint(std::string_view part);
  std::uint32_t fixed32(std::string_view part);
  std::span<const std::byte> len(std::string_view part);
  // Skips the value of `field` (an unknown field), a group included.
  void skip(const WireField& field);

  // Throws sluice::Error: "<what>: <message> at byte <offset>".
  [[noreturn]] void fail(const std::string& message, std::size_t offset) const;
  [[noreturn]] void wrong_type(const WireField& field, std::string_view part, WireType expected) const;

 private:
  std::uint64_t raw_varint(std::string_view part);
  std::span<const std::byte> bytes_;
  std::string_view what_;
  std::size_t base_;
  std::size_t at_ = 0;
};

}  // namespace sluice::io::detail
