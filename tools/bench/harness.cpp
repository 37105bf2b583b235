#include "harness.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include <sys/mman.h>

#include <stdexcept>

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

double first_touch_us() {
  constexpr std::size_t kBytes = std::size_t{64} << 20;
  std::vector<double> costs;
  for (int run = 0; run < 3; ++run) {
    void* fresh = mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (fresh == MAP_FAILED) throw std::runtime_error("mmap of 64 MiB for the first-touch probe failed");
    auto* bytes = static_cast<volatile unsigned char*>(fresh);
    const Stopwatch clock;
    for (std::size_t offset = 0; offset < kBytes; offset += kPageBytes) bytes[offset] = 1;
    costs.push_back(clock.seconds() / (kBytes / kPageBytes) * 1e6);
    munmap(fresh, kBytes);
  }
  return median(costs);
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
