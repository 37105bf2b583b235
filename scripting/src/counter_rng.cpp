#include "counter_rng.h"

#include <cmath>
#include <numbers>

namespace sluice::scripting {
namespace {

constexpr std::uint64_t kGolden = 0x9E3779B97F4A7C15ull;

constexpr std::uint64_t mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace

std::uint64_t rng_key(std::uint64_t seed, std::uint64_t domain, std::uint64_t epoch,
                      std::uint64_t index) {
  std::uint64_t k = mix64(seed + kGolden);
  k = mix64(k ^ (domain + 2 * kGolden));
  k = mix64(k ^ (epoch + 3 * kGolden));
  return mix64(k ^ (index + 4 * kGolden));
}

std::uint64_t rng_next(CounterRng& rng) {
  rng.counter += 1;
  return mix64(rng.key + rng.counter * kGolden);
}

double rng_uniform(CounterRng& rng) {
  return static_cast<double>(rng_next(rng) >> 11) * 0x1.0p-53;
}

double rng_normal(CounterRng& rng) {
  const double u1 = 1.0 - rng_uniform(rng);  // (0, 1]: log is finite
  const double u2 = rng_uniform(rng);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

}  // namespace sluice::scripting
