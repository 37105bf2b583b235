// json.h: a small JSON reader and writer for Sluice's own files (loader
// state, run records). Numbers are kept as text so that 64-bit integers stay
// exact.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::detail {

struct JsonValue {
  enum Kind { null, boolean, number, string, array, object } kind = null;
  bool b = false;
  std::string text;  // number (as written) or string (unescaped)
  std::vector<JsonValue> items;
  std::map<std::string, JsonValue, std::less<>> members;

  // Accessors that throw Error naming `what` when the value has another type.
  std::uint64_t as_u64(std::string_view what) const;
  bool as_bool(std::string_view what) const;
  const std::string& as_string(std::string_view what) const;
  const std::vector<JsonValue>& as_array(std::string_view what) const;
  // The member `key` of an object; throws Error if absent.
  const JsonValue& at(std::string_view key) const;
  const JsonValue* find(std::string_view key) const;
};

// Parses one JSON value; throws Error with the byte offset of a syntax error.
JsonValue parse_json(std::string_view text);

// Bytes of the well-formed UTF-8 character at s[i] (its first byte 0x80 or
// more), or 0 (RFC 3629: no overlong form, surrogate, or past U+10FFFF, and
// not cut short by the end of s).
std::size_t utf8_at(std::string_view s, std::size_t i) noexcept;

// Appends s as a JSON string literal.
void append_json_string(std::string& out, std::string_view s);

}  // namespace sluice::detail
