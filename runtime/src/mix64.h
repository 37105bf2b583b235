// mix64.h: splitmix64's finalizer, a bijective 64-bit mixer with full
// avalanche; the plan's keys and Feistel rounds are built from it.
#pragma once

#include <cstdint>

namespace sluice::detail {

inline std::uint64_t mix64(std::uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

}  // namespace sluice::detail
