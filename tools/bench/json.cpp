#include "json.h"

#include <cmath>
#include <cstdio>

namespace sluice::bench {
namespace {

void append_number(std::string& out, double value) {
  if (!std::isfinite(value)) {
    out += "null";
    return;
  }
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", value);
  out += text;
}

void append_string(std::string& out, std::string_view value) {
  out += '"';
  for (const char c : value) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char escaped[8];
          std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned>(c));
          out += escaped;
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

}  // namespace

void JsonObject::key(std::string_view key) {
  if (!body_.empty()) body_ += ',';
  append_string(body_, key);
  body_ += ':';
}

JsonObject& JsonObject::number(std::string_view k, double value) {
  key(k);
  append_number(body_, value);
  return *this;
}

JsonObject& JsonObject::number(std::string_view k, std::optional<double> value) {
  return value ? number(k, *value) : null(k);
}

JsonObject& JsonObject::integer(std::string_view k, std::int64_t value) {
  key(k);
  body_ += std::to_string(value);
  return *this;
}

JsonObject& JsonObject::boolean(std::string_view k, bool value) {
  key(k);
  body_ += value ? "true" : "false";
  return *this;
}

JsonObject& JsonObject::string(std::string_view k, std::string_view value) {
  key(k);
  append_string(body_, value);
  return *this;
}

JsonObject& JsonObject::string_or_null(std::string_view k, std::string_view value) {
  return value.empty() ? null(k) : string(k, value);
}

JsonObject& JsonObject::null(std::string_view k) {
  key(k);
  body_ += "null";
  return *this;
}

JsonObject& JsonObject::numbers(std::string_view k, const std::vector<double>& values) {
  key(k);
  body_ += '[';
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i > 0) body_ += ',';
    append_number(body_, values[i]);
  }
  body_ += ']';
  return *this;
}

JsonObject& JsonObject::numbers(std::string_view k, const std::optional<std::vector<double>>& values) {
  return values ? numbers(k, *values) : null(k);
}

JsonObject& JsonObject::object(std::string_view k, const JsonObject& value) {
  key(k);
  body_ += value.str();
  return *this;
}

std::string JsonObject::str() const { return "{" + body_ + "}"; }

}  // namespace sluice::bench
