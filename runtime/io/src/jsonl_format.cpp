#include "jsonl_format.h"

#include <algorithm>
#include <cstring>
#include <string_view>

#include "json.h"
#include "sluice/error.h"

namespace sluice::io::detail {
namespace {

constexpr int kMaxDepth = 256;

// The length of the UTF-8 character at p (its first byte 0x80 or more), or
// 0 when it is not one (detail::utf8_at). JSON text is UTF-8 (RFC 8259):
// other bytes in a string (Latin-1, cut characters) are refused as Python's
// json, serde_json and DuckDB refuse them, so a tokenizer never gets bytes
// that are not text.
std::size_t utf8_length(const char* p, const char* end) noexcept {
  return sluice::detail::utf8_at(std::string_view(p, static_cast<std::size_t>(end - p)), 0);
}

class LineParser {
 public:
  LineParser(std::span<const std::byte> line, Sample& out)
      : begin_(reinterpret_cast<const char*>(line.data())), p_(begin_), end_(begin_ + line.size()), out_(out) {}

  // The line's one object; its members go to out.fields, and the value at
  // `path` (when reached) to *selected.
  void object_line(const std::vector<std::string>& path, std::span<const std::byte>* selected, bool* found,
                   bool text) {
    text_ = text;
    ws();
    if (p_ == end_ || *p_ != '{') fail(p_ == end_ ? "an empty line" : "the line is not a JSON object");
    object(1, &path, 0, selected, found, true);
    ws();
    if (p_ != end_) fail("text after the object");
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw Error("column " + std::to_string(p_ - begin_ + 1) + ": " + why);
  }

  void ws() {
    while (p_ != end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\r' || *p_ == '\n')) ++p_;
  }

  void expect(char c) {
    ws();
    if (p_ == end_) fail(std::string("the line ends where '") + c + "' is expected");
    if (*p_ != c) fail(std::string("expected '") + c + "'");
    ++p_;
  }

  // Members of an object (at '{'). Along `path` (from component `follow`),
  // the value of the last component goes to *selected. `top`: members become
  // fields.
  void object(int depth, const std::vector<std::string>* path, std::size_t follow,
              std::span<const std::byte>* selected, bool* found, bool top) {
    ++p_;  // '{'
    ws();
    if (p_ != end_ && *p_ == '}') {
      ++p_;
      return;
    }
    for (;;) {
      ws();
      if (p_ == end_ || *p_ != '"') fail(p_ == end_ ? "the line ends inside an object" : "expected a key in quotes");
      const std::span<const std::byte> key = string();
      expect(':');
      ws();
      const std::string_view name(reinterpret_cast<const char*>(key.data()), key.size());
      // A key given twice: the last counts (the value along the path under an
      // earlier one is forgotten), as parse_jsonl_line keeps the last member.
      const bool on_path = path && name == (*path)[follow];
      const bool last = on_path && follow + 1 == path->size();
      if (on_path && !last) *found = false;
      const char* at = p_;
      const std::span<const std::byte> v =
          value(depth, on_path && !last ? path : nullptr, follow + 1, selected, found);
      if (last) selected_string_ = *at == '"';
      if (last) {
        *selected = v;
        *found = true;
      }
      if (top) {
        out_.fields.push_back({name, v});
        top_string_.push_back(*at == '"');
      }
      ws();
      if (p_ == end_) fail("the line ends inside an object");
      if (*p_ == '}') {
        ++p_;
        return;
      }
      if (*p_ != ',') fail("expected ',' or '}'");
      ++p_;
    }
  }

  // One value: a string's unescaped bytes, or any other value's JSON text.
  std::span<const std::byte> value(int depth, const std::vector<std::string>* path, std::size_t follow,
                                   std::span<const std::byte>* selected, bool* found) {
    if (p_ == end_) fail("the line ends where a value is expected");
    const char* start = p_;
    switch (*p_) {
      case '"':
        return string();
      case '{':
        if (depth >= kMaxDepth) fail("nested deeper than " + std::to_string(kMaxDepth));
        object(depth + 1, path, follow, selected, found, false);
        break;
      case '[':
        if (depth >= kMaxDepth) fail("nested deeper than " + std::to_string(kMaxDepth));
        array(depth + 1);
        break;
      case 't': literal("true"); break;
      case 'f': literal("false"); break;
      case 'n': literal("null"); break;
      default:
        number();
    }
    return {reinterpret_cast<const std::byte*>(start), static_cast<std::size_t>(p_ - start)};
  }

  void array(int depth) {
    ++p_;  // '['
    ws();
    if (p_ != end_ && *p_ == ']') {
      ++p_;
      return;
    }
    for (;;) {
      ws();
      value(depth, nullptr, 0, nullptr, nullptr);
      ws();
      if (p_ == end_) fail("the line ends inside an array");
      if (*p_ == ']') {
        ++p_;
        return;
      }
      if (*p_ != ',') fail("expected ',' or ']'");
      ++p_;
    }
  }

  void literal(const char* word) {
    const std::size_t n = std::strlen(word);
    if (static_cast<std::size_t>(end_ - p_) < n || std::memcmp(p_, word, n) != 0) fail("not a JSON value");
    p_ += n;
  }

  static bool digit(char c) { return c >= '0' && c <= '9'; }

  void number() {
    if (p_ != end_ && *p_ == '-') ++p_;
    if (p_ == end_ || !digit(*p_)) fail("not a JSON value");
    if (*p_ == '0') ++p_;
    else while (p_ != end_ && digit(*p_)) ++p_;
    if (p_ != end_ && *p_ == '.') {
      ++p_;
      if (p_ == end_ || !digit(*p_)) fail("a digit must follow the decimal point");
      while (p_ != end_ && digit(*p_)) ++p_;
    }
    if (p_ != end_ && (*p_ == 'e' || *p_ == 'E')) {
      ++p_;
      if (p_ != end_ && (*p_ == '+' || *p_ == '-')) ++p_;
      if (p_ == end_ || !digit(*p_)) fail("a digit must follow the exponent");
      while (p_ != end_ && digit(*p_)) ++p_;
    }
  }

  unsigned hex4() {
    if (end_ - p_ < 4) fail("a \\u escape needs four hex digits");
    unsigned v = 0;
    for (int i = 0; i < 4; ++i, ++p_) {
      const char c = *p_;
      v <<= 4;
      if (digit(c)) v |= static_cast<unsigned>(c - '0');
      else if (c >= 'a' && c <= 'f') v |= static_cast<unsigned>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') v |= static_cast<unsigned>(c - 'A' + 10);
      else fail("a \\u escape needs four hex digits");
    }
    return v;
  }

  void put(char c) { out_.storage.push_back(static_cast<std::byte>(c)); }

  void put_utf8(unsigned cp) {
    if (cp < 0x80) {
      put(static_cast<char>(cp));
    } else if (cp < 0x800) {
      put(static_cast<char>(0xC0 | (cp >> 6)));
      put(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      put(static_cast<char>(0xE0 | (cp >> 12)));
      put(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      put(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      put(static_cast<char>(0xF0 | (cp >> 18)));
      put(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
      put(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      put(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }

  // The length of the UTF-8 character at p_ (a byte of 0x80 or more), or
  // the line's error naming the byte.
  std::size_t utf8_char() const {
    const std::size_t n = utf8_length(p_, end_);
    if (n == 0) {
      // The bytes of the would-be character: a lead byte that starts none
      // alone, else the lead and what follows it up to its length.
      static constexpr char kHex[] = "0123456789ABCDEF";
      const auto lead = static_cast<unsigned char>(*p_);
      const std::size_t want = lead >= 0xF0 && lead <= 0xF4 ? 4 : lead >= 0xE0 && lead <= 0xEF ? 3 : lead >= 0xC2 && lead <= 0xDF ? 2 : 1;
      std::string bytes;
      for (std::size_t i = 0; i < want && p_ + i < end_; ++i) {
        const auto b = static_cast<unsigned char>(p_[i]);
        bytes += std::string(i ? " " : "") + "0x" + kHex[b >> 4] + kHex[b & 15];
      }
      fail("a byte that is not UTF-8 inside a string (" + bytes +
           "; JSON text is UTF-8: convert the file, e.g. with iconv -f latin1 -t utf-8, or set on_error = "
           "\"skip\" to drop such lines)");
    }
    return n;
  }

  // A string (at '"'): a view into the line when it has no escape, else its
  // unescaped bytes appended to storage.
  std::span<const std::byte> string() {
    ++p_;  // '"'
    const char* start = p_;
    while (p_ != end_ && *p_ != '"' && *p_ != '\\') {
      const auto c = static_cast<unsigned char>(*p_);
      if (c < 0x20) fail("a control character inside a string");
      p_ += c < 0x80 ? 1 : utf8_char();
    }
    if (p_ == end_) fail("the line ends inside a string");
    if (*p_ == '"') {
      ++p_;
      return {reinterpret_cast<const std::byte*>(start), static_cast<std::size_t>(p_ - 1 - start)};
    }
    const std::size_t first = out_.storage.size();
    out_.storage.insert(out_.storage.end(), reinterpret_cast<const std::byte*>(start),
                        reinterpret_cast<const std::byte*>(p_));
    for (;;) {
      if (p_ == end_) fail("the line ends inside a string");
      const char c = *p_;
      if (c == '"') {
        ++p_;
        break;
      }
      if (static_cast<unsigned char>(c) < 0x20) fail("a control character inside a string");
      if (static_cast<unsigned char>(c) >= 0x80) {
        const std::size_t n = utf8_char();
        for (std::size_t i = 0; i < n; ++i) put(p_[i]);
        p_ += n;
        continue;
      }
      if (c != '\\') {
        put(c);
        ++p_;
        continue;
      }
      if (++p_ == end_) fail("the line ends inside a string");
      const char e = *p_++;
      switch (e) {
        case '"': put('"'); break;
        case '\\': put('\\'); break;
        case '/': put('/'); break;
        case 'b': put('\b'); break;
        case 'f': put('\f'); break;
        case 'n': put('\n'); break;
        case 'r': put('\r'); break;
        case 't': put('\t'); break;
        case 'u': {
          unsigned cp = hex4();
          if (cp >= 0xDC00 && cp <= 0xDFFF) fail("a \\u escape of a low surrogate without a high one");
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (end_ - p_ < 2 || p_[0] != '\\' || p_[1] != 'u') fail("a high surrogate without its low one");
            p_ += 2;
            const unsigned low = hex4();
            if (low < 0xDC00 || low > 0xDFFF) fail("a high surrogate without its low one");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          }
          put_utf8(cp);
          break;
        }
        default:
          --p_;
          fail(std::string("an unknown escape \\") + e);
      }
    }
    return {out_.storage.data() + first, out_.storage.size() - first};
  }

  const char* begin_;
  const char* p_;
  const char* end_;
  Sample& out_;
  bool text_ = false;  // the selected value must be a string

 public:
  // Whether top-level member k (out.fields[k] as parsed) is a string, and
  // whether the value found along the path was.
  bool top_string(std::size_t k) const { return k < top_string_.size() && top_string_[k]; }
  bool selected_string() const { return selected_string_; }

 private:
  std::vector<bool> top_string_;
  bool selected_string_ = false;
};

}  // namespace

void parse_jsonl_line(std::span<const std::byte> line, std::string_view name,
                      const std::vector<std::string>& path, Sample& out, bool text) {
  out.storage.clear();
  out.storage.reserve(line.size());  // never outgrown: spans into it stay valid
  LineParser parser(line, out);
  std::span<const std::byte> selected;
  bool found = false;
  parser.object_line(path, &selected, &found, text);
  // A key given twice: the last value counts, as Python's json and
  // JavaScript read it; the earlier ones are dropped, so that the selected
  // field, the keys and every reader agree.
  const std::size_t n = out.fields.size();
  bool repeated = false;  // any key given twice (pairwise for a few keys, sorted for many)
  if (n <= 16) {
    for (std::size_t k = 0; k < n && !repeated; ++k)
      for (std::size_t j = k + 1; j < n && !repeated; ++j) repeated = out.fields[j].name == out.fields[k].name;
  } else {
    std::vector<std::string_view> names;
    names.reserve(n);
    for (const Field& f : out.fields) names.push_back(f.name);
    std::sort(names.begin(), names.end());
    repeated = std::adjacent_find(names.begin(), names.end()) != names.end();
  }
  std::vector<std::size_t> parsed_as;  // with a repeated key: field k was parsed as member parsed_as[k]
  if (repeated) {
    std::size_t kept = 0;
    for (std::size_t k = 0; k < n; ++k) {
      bool later = false;
      for (std::size_t j = k + 1; j < n && !later; ++j) later = out.fields[j].name == out.fields[k].name;
      if (later) continue;
      parsed_as.push_back(k);
      if (kept != k) out.fields[kept] = std::move(out.fields[k]);
      ++kept;
    }
    out.fields.resize(kept);
  }
  if (name.empty()) return;  // no selected field: the keys only
  // A top-level key spelled exactly as `name` wins over a dotted path.
  // The value selected must be a string when it is text to tokenize.
  auto not_text = [&](std::span<const std::byte> v) {
    std::size_t cut = std::min<std::size_t>(v.size(), 40);
    while (cut > 0 && cut < v.size() && (static_cast<unsigned char>(v[cut]) & 0xC0) == 0x80) --cut;
    return Error("\"" + std::string(name) + "\" is " + std::string(reinterpret_cast<const char*>(v.data()), cut) +
                 (cut < v.size() ? "..." : "") +
                 ", not a string: the field is text (sample.bytes, a document to tokenize) and must be a JSON "
                 "string (on_error = \"skip\" leaves such lines out)");
  };
  for (std::size_t k = 0; k < out.fields.size(); ++k) {
    if (out.fields[k].name == name) {
      if (text && !parser.top_string(repeated ? parsed_as[k] : k)) throw not_text(out.fields[k].bytes);
      if (k > 0) std::swap(out.fields[0], out.fields[k]);
      return;
    }
  }
  if (!found) throw Error("no key '" + std::string(name) + "' (on_error = \"skip\" leaves such lines out)");
  if (text && !parser.selected_string()) throw not_text(selected);
  out.fields.insert(out.fields.begin(), Field{name, selected});
}

}  // namespace sluice::io::detail
