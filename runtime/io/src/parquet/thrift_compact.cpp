#include "parquet/thrift_compact.h"

#include <cstring>
#include <string>

#include "sluice/error.h"

namespace sluice::io::parquet {

void ThriftReader::fail(const char* what) const {
  throw Error("thrift: " + std::string(what) + " at byte " + std::to_string(consumed()));
}

std::uint8_t ThriftReader::byte() {
  if (p_ >= end_) fail("truncated");
  return static_cast<std::uint8_t>(*p_++);
}

std::uint64_t ThriftReader::varint() {
  std::uint64_t v = 0;
  for (int shift = 0; shift < 70; shift += 7) {
    const std::uint8_t b = byte();
    v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) return v;
  }
  fail("varint longer than 10 bytes");
}

void ThriftReader::begin_struct() {
  if (depth_ >= 63) fail("structs nested too deep");
  last_[++depth_] = 0;
}

void ThriftReader::end_struct() {
  if (depth_ > 0) --depth_;
}

bool ThriftReader::next_field(std::int16_t& id, TType& type) {
  const std::uint8_t header = byte();
  const std::uint8_t t = header & 0x0f;
  if (t == 0) return false;
  if (t > 12) fail("bad field type");
  const std::uint8_t delta = header >> 4;
  if (delta != 0) {
    id = static_cast<std::int16_t>(last_[depth_] + delta);
  } else {
    const std::uint64_t z = varint();
    id = static_cast<std::int16_t>((z >> 1) ^ (~(z & 1) + 1));
  }
  last_[depth_] = id;
  type = static_cast<TType>(t);
  pending_bool_ = type == TType::bool_true;
  return true;
}

std::int64_t ThriftReader::read_int(TType type) {
  switch (type) {
    case TType::i8: return static_cast<std::int8_t>(byte());
    case TType::i16:
    case TType::i32:
    case TType::i64: {
      const std::uint64_t z = varint();
      return static_cast<std::int64_t>((z >> 1) ^ (~(z & 1) + 1));
    }
    default: fail("expected an integer");
  }
}

std::int32_t ThriftReader::read_i32(TType type) {
  const std::int64_t v = read_int(type);
  if (v < INT32_MIN || v > INT32_MAX) fail("i32 out of range");
  return static_cast<std::int32_t>(v);
}

bool ThriftReader::read_bool(TType type) {
  if (type == TType::bool_true || type == TType::bool_false) return type == TType::bool_true;
  fail("expected a bool");
}

bool ThriftReader::read_bool_element() { return byte() == 1; }

double ThriftReader::read_double() {
  if (end_ - p_ < 8) fail("truncated double");
  double d;
  std::memcpy(&d, p_, 8);
  p_ += 8;
  return d;
}

std::string_view ThriftReader::read_binary() {
  const std::uint64_t n = varint();
  if (n > static_cast<std::uint64_t>(end_ - p_)) fail("binary longer than its input");
  std::string_view s(reinterpret_cast<const char*>(p_), n);
  p_ += n;
  return s;
}

std::uint32_t ThriftReader::read_list(TType& element) {
  const std::uint8_t header = byte();
  std::uint64_t n = header >> 4;
  if (n == 15) n = varint();
  element = static_cast<TType>(header & 0x0f);
  if (static_cast<std::uint8_t>(element) > 12) fail("bad list element type");
  // Every element takes at least one byte (except true/false in no list).
  if (n > static_cast<std::uint64_t>(end_ - p_)) fail("list longer than its input");
  return static_cast<std::uint32_t>(n);
}

void ThriftReader::skip(TType type) {
  switch (type) {
    case TType::bool_true:
    case TType::bool_false: return;
    case TType::i8: byte(); return;
    case TType::i16:
    case TType::i32:
    case TType::i64: varint(); return;
    case TType::dbl: read_double(); return;
    case TType::binary: read_binary(); return;
    case TType::list:
    case TType::set: {
      TType element;
      const std::uint32_t n = read_list(element);
      if (depth_ >= 63) fail("lists nested too deep");
      ++depth_;
      for (std::uint32_t i = 0; i < n; ++i) {
        if (element == TType::bool_true || element == TType::bool_false) byte();
        else skip(element);
      }
      --depth_;
      return;
    }
    case TType::map: {
      const std::uint64_t n = varint();
      if (n == 0) return;
      if (n > static_cast<std::uint64_t>(end_ - p_)) fail("map longer than its input");
      const std::uint8_t kv = byte();
      const auto k = static_cast<TType>(kv >> 4), v = static_cast<TType>(kv & 0x0f);
      if (depth_ >= 63) fail("maps nested too deep");
      ++depth_;
      for (std::uint64_t i = 0; i < n; ++i) {
        if (k == TType::bool_true || k == TType::bool_false) byte(); else skip(k);
        if (v == TType::bool_true || v == TType::bool_false) byte(); else skip(v);
      }
      --depth_;
      return;
    }
    case TType::structure: {
      begin_struct();
      std::int16_t id;
      TType t;
      while (next_field(id, t)) skip(t);
      end_struct();
      return;
    }
    default: fail("bad type");
  }
}

}  // namespace sluice::io::parquet
