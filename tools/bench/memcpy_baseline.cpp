#include "memcpy_baseline.h"

#include <cstring>
#include <memory>
#include <vector>

#include "harness.h"

namespace sluice::bench {

double memcpy_gb_per_s(std::size_t bytes, int copies) {
  // Writing every byte faults every page in before anything is timed.
  std::unique_ptr<std::byte[]> source(new std::byte[bytes]);
  std::unique_ptr<std::byte[]> target(new std::byte[bytes]);
  std::memset(source.get(), 1, bytes);
  std::memset(target.get(), 2, bytes);

  std::memcpy(target.get(), source.get(), bytes);
  std::vector<double> rates;
  for (int i = 0; i < copies; ++i) {
    const Stopwatch clock;
    std::memcpy(target.get(), source.get(), bytes);
    // The copy must be complete, and not elided, before the clock is read.
    asm volatile("" : : "r"(target.get()) : "memory");
    rates.push_back(static_cast<double>(bytes) / clock.seconds() / 1e9);
  }
  return median(std::move(rates));
}

}  // namespace sluice::bench
