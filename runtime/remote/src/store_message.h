// Internal: what a store said about a failed request, for error messages.
//
// An S3 error document gives " (Code: Message)"; a short text body gives
// " (its first line, up to 200 bytes)"; anything else (HTML pages, binary)
// gives "". Thread safety: a pure function.
#pragma once

#include <string>
#include <string_view>

#include "xml_text.h"

namespace sluice::remote {

inline std::string store_message(std::string_view body) {
  const std::string code = detail::xml_text(body, "Code");
  const std::string message = detail::xml_text(body, "Message");
  if (!code.empty() || !message.empty())
    return " (" + code + (code.empty() || message.empty() ? "" : ": ") + message + ")";
  if (body.empty() || body.find('<') != std::string_view::npos) return "";
  std::string line(body.substr(0, std::min<std::size_t>(body.find('\n'), 200)));
  for (char& c : line)
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
  return line.empty() ? "" : " (" + line + ")";
}

}  // namespace sluice::remote
