// json.h: a minimal writer for the one JSON object `sluice bench --json` prints.
//
// Members keep the order they are added in. Non-finite numbers, absent
// optionals and, through string_or_null, empty strings are written as null.
//
// Thread safety: a JsonObject is a plain value.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::bench {

class JsonObject {
 public:
  JsonObject& number(std::string_view key, double value);
  JsonObject& number(std::string_view key, std::optional<double> value);
  JsonObject& integer(std::string_view key, std::int64_t value);
  JsonObject& boolean(std::string_view key, bool value);
  JsonObject& string(std::string_view key, std::string_view value);
  JsonObject& string_or_null(std::string_view key, std::string_view value);
  JsonObject& null(std::string_view key);
  JsonObject& numbers(std::string_view key, const std::vector<double>& values);
  JsonObject& numbers(std::string_view key, const std::optional<std::vector<double>>& values);
  JsonObject& object(std::string_view key, const JsonObject& value);

  // The object on one line, e.g. {"a":1,"b":[2.5,null]}.
  std::string str() const;

 private:
  void key(std::string_view key);
  std::string body_;
};

}  // namespace sluice::bench
