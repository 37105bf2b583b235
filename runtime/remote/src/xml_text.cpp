#include "xml_text.h"

#include <cstdlib>

namespace sluice::remote::detail {
namespace {

void append_utf8(std::string& out, unsigned long cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x110000) {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

}  // namespace

std::string xml_decode(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '&') {
      out += text[i];
      continue;
    }
    const std::size_t semi = text.find(';', i);
    if (semi == std::string_view::npos || semi - i > 10) {
      out += '&';
      continue;
    }
    const std::string_view name = text.substr(i + 1, semi - i - 1);
    if (name == "amp") out += '&';
    else if (name == "lt") out += '<';
    else if (name == "gt") out += '>';
    else if (name == "quot") out += '"';
    else if (name == "apos") out += '\'';
    else if (name.size() > 1 && name[0] == '#') {
      const std::string digits(name.substr(name[1] == 'x' ? 2 : 1));
      append_utf8(out, std::strtoul(digits.c_str(), nullptr, name[1] == 'x' ? 16 : 10));
    } else {
      out += text.substr(i, semi - i + 1);
    }
    i = semi;
  }
  return out;
}

std::vector<std::string_view> xml_elements(std::string_view xml, std::string_view tag) {
  const std::string open = "<" + std::string(tag) + ">", close = "</" + std::string(tag) + ">";
  std::vector<std::string_view> out;
  std::size_t at = 0;
  for (;;) {
    const std::size_t a = xml.find(open, at);
    if (a == std::string_view::npos) break;
    const std::size_t b = xml.find(close, a + open.size());
    if (b == std::string_view::npos) break;
    out.push_back(xml.substr(a + open.size(), b - a - open.size()));
    at = b + close.size();
  }
  return out;
}

std::string xml_text(std::string_view xml, std::string_view tag) {
  const std::string open = "<" + std::string(tag) + ">", close = "</" + std::string(tag) + ">";
  const std::size_t a = xml.find(open);
  if (a == std::string_view::npos) return "";
  const std::size_t b = xml.find(close, a + open.size());
  if (b == std::string_view::npos) return "";
  return xml_decode(xml.substr(a + open.size(), b - a - open.size()));
}

}  // namespace sluice::remote::detail
