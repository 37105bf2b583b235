#include "json.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>

#include "sluice/error.h"

namespace sluice::detail {

namespace {

class Parser {
 public:
  explicit Parser(std::string_view text) : s_(text) {}

  JsonValue document() {
    JsonValue v = value(0);
    space();
    if (pos_ != s_.size()) error("unexpected text after the value");
    return v;
  }

 private:
  [[noreturn]] void error(const std::string& what) const {
    throw Error("JSON: " + what + " at byte " + std::to_string(pos_));
  }
  void space() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\t' || s_[pos_] == '\r')) ++pos_;
  }
  bool eat(char c) {
    space();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!eat(c)) error(std::string("expected '") + c + "'");
  }
  bool word(std::string_view w) {
    if (s_.substr(pos_, w.size()) != w) return false;
    pos_ += w.size();
    return true;
  }

  JsonValue value(int depth) {
    if (depth > 64) error("nesting too deep");
    space();
    if (pos_ >= s_.size()) error("unexpected end");
    JsonValue v;
    char c = s_[pos_];
    if (c == '{') {
      ++pos_;
      v.kind = JsonValue::object;
      if (eat('}')) return v;
      do {
        space();
        std::string key = string_literal();
        expect(':');
        v.members.insert_or_assign(std::move(key), value(depth + 1));
      } while (eat(','));
      expect('}');
    } else if (c == '[') {
      ++pos_;
      v.kind = JsonValue::array;
      if (eat(']')) return v;
      do v.items.push_back(value(depth + 1));
      while (eat(','));
      expect(']');
    } else if (c == '"') {
      v.kind = JsonValue::string;
      v.text = string_literal();
    } else if (word("true")) {
      v.kind = JsonValue::boolean;
      v.b = true;
    } else if (word("false")) {
      v.kind = JsonValue::boolean;
    } else if (word("null")) {
      v.kind = JsonValue::null;
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      std::size_t start = pos_++;
      while (pos_ < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '.' ||
                                  s_[pos_] == 'e' || s_[pos_] == 'E' || s_[pos_] == '+' || s_[pos_] == '-')) {
        ++pos_;
      }
      v.kind = JsonValue::number;
      v.text = std::string(s_.substr(start, pos_ - start));
    } else {
      error(std::string("unexpected character '") + c + "'");
    }
    return v;
  }

  std::string string_literal() {
    if (pos_ >= s_.size() || s_[pos_] != '"') error("expected a string");
    ++pos_;
    std::string out;
    while (pos_ < s_.size() && s_[pos_] != '"') {
      char c = s_[pos_++];
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= s_.size()) break;
      char e = s_[pos_++];
      switch (e) {
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'u': {
          if (pos_ + 4 > s_.size()) error("short \\u escape");
          unsigned code = static_cast<unsigned>(std::strtoul(std::string(s_.substr(pos_, 4)).c_str(), nullptr, 16));
          pos_ += 4;
          if (code >= 0xdc80 && code <= 0xdcff) {  // a byte append_json_string escaped
            out += static_cast<char>(code - 0xdc00);
          } else if (code < 0x80) {
            out += static_cast<char>(code);
          } else if (code < 0x800) {
            out += static_cast<char>(0xc0 | (code >> 6));
            out += static_cast<char>(0x80 | (code & 0x3f));
          } else {
            out += static_cast<char>(0xe0 | (code >> 12));
            out += static_cast<char>(0x80 | ((code >> 6) & 0x3f));
            out += static_cast<char>(0x80 | (code & 0x3f));
          }
          break;
        }
        default: out += e;
      }
    }
    if (pos_ >= s_.size()) error("unterminated string");
    ++pos_;
    return out;
  }

  std::string_view s_;
  std::size_t pos_ = 0;
};

[[noreturn]] void wrong_type(std::string_view what, const char* expected) {
  throw Error(std::string(what) + " must be " + expected);
}

}  // namespace

JsonValue parse_json(std::string_view text) { return Parser(text).document(); }

std::uint64_t JsonValue::as_u64(std::string_view what) const {
  if (kind != number || text.empty() || text[0] == '-' || text.find_first_of(".eE") != std::string::npos) {
    wrong_type(what, "a non-negative integer");
  }
  errno = 0;
  char* end = nullptr;
  unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (errno != 0 || *end != '\0') wrong_type(what, "an integer that fits 64 bits");
  return v;
}

bool JsonValue::as_bool(std::string_view what) const {
  if (kind != boolean) wrong_type(what, "true or false");
  return b;
}

const std::string& JsonValue::as_string(std::string_view what) const {
  if (kind != string) wrong_type(what, "a string");
  return text;
}

const std::vector<JsonValue>& JsonValue::as_array(std::string_view what) const {
  if (kind != array) wrong_type(what, "an array");
  return items;
}

const JsonValue* JsonValue::find(std::string_view key) const {
  if (kind != object) return nullptr;
  auto it = members.find(key);
  return it == members.end() ? nullptr : &it->second;
}

const JsonValue& JsonValue::at(std::string_view key) const {
  const JsonValue* v = find(key);
  if (!v) throw Error("missing key \"" + std::string(key) + "\"");
  return *v;
}

std::size_t utf8_at(std::string_view s, std::size_t i) noexcept {
  const auto at = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const unsigned lead = at(0);
  std::size_t n = 0;
  unsigned lo = 0x80, hi = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) n = 2;
  else if (lead >= 0xE0 && lead <= 0xEF) n = 3, lo = lead == 0xE0 ? 0xA0 : 0x80, hi = lead == 0xED ? 0x9F : 0xBF;
  else if (lead >= 0xF0 && lead <= 0xF4) n = 4, lo = lead == 0xF0 ? 0x90 : 0x80, hi = lead == 0xF4 ? 0x8F : 0xBF;
  if (n == 0 || s.size() - i < n || at(1) < lo || at(1) > hi) return 0;
  for (std::size_t k = 2; k < n; ++k)
    if (at(k) < 0x80 || at(k) > 0xBF) return 0;
  return n;
}

// A byte that is not part of UTF-8 text (a Latin-1 file name) is written as
// the lone surrogate \udcXX, as Python's surrogateescape decodes it, so the
// line stays valid JSON for every reader and parse_json gives the byte back.
void append_json_string(std::string& out, std::string_view s) {
  static const char* hex = "0123456789abcdef";
  out += '"';
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    auto u = static_cast<unsigned char>(c);
    if (u >= 0x80) {
      const std::size_t n = utf8_at(s, i);
      if (n == 0) {
        out += "\\udc";
        out += hex[u >> 4];
        out += hex[u & 15];
      } else {
        out.append(s.substr(i, n));
        i += n - 1;
      }
    } else if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (u < 0x20) {
      out += "\\u00";
      out += hex[u >> 4];
      out += hex[u & 15];
    } else {
      out += c;
    }
  }
  out += '"';
}

}  // namespace sluice::detail
