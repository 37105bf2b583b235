#include "sluice/remote/url.h"

#include <cctype>

#include "sluice/error.h"

namespace sluice::remote {
namespace {

constexpr std::uint64_t max_names = 10'000'000;

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

bool all_digits(std::string_view s) {
  if (s.empty() || s.size() > 18) return false;
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

// The names one brace body stands for: "000..127" or "a,b,c".
std::vector<std::string> alternatives(const std::string& pattern, std::string_view body) {
  const std::size_t dots = body.find("..");
  if (dots != std::string_view::npos && body.find(',') == std::string_view::npos) {
    const std::string_view lo = body.substr(0, dots), hi = body.substr(dots + 2);
    if (!all_digits(lo) || !all_digits(hi))
      throw Error("bad brace range {" + std::string(body) + "} in '" + pattern + "': expected {A..B} with decimal A and B");
    const std::uint64_t a = std::stoull(std::string(lo)), b = std::stoull(std::string(hi));
    if (a > b) throw Error("bad brace range {" + std::string(body) + "} in '" + pattern + "': it runs backwards");
    if (b - a >= max_names)
      throw Error("bad brace range {" + std::string(body) + "} in '" + pattern + "': more than 10000000 names");
    const bool pad = (lo.size() > 1 && lo[0] == '0') || lo.size() == hi.size();
    std::vector<std::string> out;
    for (std::uint64_t i = a; i <= b; ++i) {
      std::string n = std::to_string(i);
      if (pad && n.size() < lo.size()) n.insert(0, lo.size() - n.size(), '0');
      out.push_back(std::move(n));
    }
    return out;
  }
  std::vector<std::string> out;
  std::size_t start = 0;
  for (;;) {
    const std::size_t comma = body.find(',', start);
    out.emplace_back(body.substr(start, comma == std::string_view::npos ? body.npos : comma - start));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

}  // namespace

bool is_remote(std::string_view path) {
  return starts_with(path, "s3://") || starts_with(path, "http://") || starts_with(path, "https://");
}

Url parse_url(const std::string& text) {
  Url url;
  url.text = text;
  std::string_view rest;
  if (starts_with(text, "s3://")) {
    url.scheme = Scheme::s3;
    rest = std::string_view(text).substr(5);
  } else if (starts_with(text, "https://")) {
    url.scheme = Scheme::https;
    rest = std::string_view(text).substr(8);
  } else if (starts_with(text, "http://")) {
    url.scheme = Scheme::http;
    rest = std::string_view(text).substr(7);
  } else {
    throw Error("bad URL '" + text + "': expected s3://, https:// or http://");
  }
  const std::size_t slash = rest.find('/');
  url.host = std::string(rest.substr(0, slash));
  if (url.host.empty())
    throw Error("bad URL '" + text + (url.scheme == Scheme::s3 ? "': no bucket" : "': no host"));
  for (char c : url.host)
    if (std::isspace(static_cast<unsigned char>(c)) || c == '@')
      throw Error("bad URL '" + text + "': the host holds '" + std::string(1, c) + "'");
  if (url.scheme == Scheme::s3) {
    url.path = slash == std::string_view::npos ? "" : std::string(rest.substr(slash + 1));
  } else {
    url.path = slash == std::string_view::npos ? "/" : std::string(rest.substr(slash));
  }
  return url;
}

std::vector<std::string> expand_braces(const std::string& pattern) {
  const std::size_t open = pattern.find('{');
  const std::size_t close_before = pattern.find('}');
  if (open == std::string::npos) {
    if (close_before != std::string::npos) throw Error("unbalanced '}' in '" + pattern + "'");
    return {pattern};
  }
  const std::size_t close = pattern.find('}', open);
  if (close == std::string::npos || close_before < open) throw Error("unbalanced '{' in '" + pattern + "'");
  const std::string_view body = std::string_view(pattern).substr(open + 1, close - open - 1);
  if (body.find('{') != std::string_view::npos) throw Error("nested '{' in '" + pattern + "'");
  const std::vector<std::string> mids = alternatives(pattern, body);
  const std::vector<std::string> tails = expand_braces(pattern.substr(close + 1));
  if (mids.size() * tails.size() > max_names) throw Error("'" + pattern + "' stands for more than 10000000 names");
  std::vector<std::string> out;
  out.reserve(mids.size() * tails.size());
  const std::string head = pattern.substr(0, open);
  for (const std::string& m : mids)
    for (const std::string& t : tails) out.push_back(head + m + t);
  return out;
}

std::string uri_encode(std::string_view text, bool keep_slash) {
  static const char hex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || (keep_slash && c == '/')) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

std::string base_name(const Url& url) {
  std::string_view p = url.path;
  const std::size_t q = p.find('?');
  if (q != std::string_view::npos) p = p.substr(0, q);
  const std::size_t slash = p.rfind('/');
  return std::string(slash == std::string_view::npos ? p : p.substr(slash + 1));
}

}  // namespace sluice::remote
