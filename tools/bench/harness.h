// harness.h: what every benchmark case shares: its options, a clock, the
// consumer's page touch, and medians.
//
// Thread safety: pure functions and value types only.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace sluice::bench {

// Options of one `sluice bench <case>` invocation, already validated.
struct CaseOptions {
  int runs = 5;                 // measured runs; reported figures are their medians
  std::uint32_t workers = 2;    // worker processes for Sluice and PyTorch alike
  std::uint64_t batches = 0;    // measured batches per Sluice run; 0 = the case's default
  std::uint32_t slots = 0;      // Sluice batch slots; 0 = the case's default
  bool pytorch = true;          // also run the PyTorch DataLoader baseline
  bool json = false;            // one JSON object on stdout instead of a table
};

// Wall-clock seconds since construction (steady clock).
class Stopwatch {
 public:
  Stopwatch() : start_(std::chrono::steady_clock::now()) {}
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::chrono::steady_clock::time_point start_;
};

inline constexpr std::size_t kPageBytes = 4096;

// What a consumer that actually uses a batch costs at least: reads one 8-byte
// word at the start of every 4 KiB page of [data, data + nbytes) and returns
// their sum. nbytes need not be a multiple of the page size; a tail shorter
// than 8 bytes is not read.
std::uint64_t touch_pages(const void* data, std::size_t nbytes);

// The cost of the first write to a fresh 4 KiB page on this machine, in
// microseconds (median of 3 runs over 64 MiB of fresh anonymous memory).
// DataLoader's transport is bound by it (it moves 3-20 us between VMs), so
// every ratio against DataLoader is printed with it.
double first_touch_us();

// Keeps the compiler from discarding the computation of `value`.
inline void keep(std::uint64_t value) { asm volatile("" : : "r"(value)); }

// The median of `values` (the mean of the middle two for an even count);
// NaN for an empty vector.
double median(std::vector<double> values);

// "a b c": each value with `decimals` digits after the point, for tables.
std::string format_values(const std::vector<double>& values, int decimals);

}  // namespace sluice::bench
