#include "harness.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace sluice::bench {

std::uint64_t touch_pages(const void* data, std::size_t nbytes) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  std::uint64_t sum = 0;
  for (std::size_t offset = 0; offset + sizeof(std::uint64_t) <= nbytes; offset += kPageBytes) {
    std::uint64_t word;
    std::memcpy(&word, bytes + offset, sizeof word);
    sum += word;
  }
  return sum;
}

double median(std::vector<double> values) {
  if (values.empty()) return std::nan("");
  std::sort(values.begin(), values.end());
  const std::size_t mid = values.size() / 2;
  if (values.size() % 2 == 1) return values[mid];
  return (values[mid - 1] + values[mid]) / 2;
}

std::string format_values(const std::vector<double>& values, int decimals) {
  std::string out;
  for (const double value : values) {
    char text[32];
    std::snprintf(text, sizeof text, "%.*f", decimals, value);
    if (!out.empty()) out += ' ';
    out += text;
  }
  return out;
}

}  // namespace sluice::bench
