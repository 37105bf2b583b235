// float_to_half: IEEE binary32 to binary16, round to nearest even.
#include <bit>
#include <cstdint>

#include "sluice/ops/normalize.h"

namespace sluice::ops {

std::uint16_t float_to_half(float x) {
  const std::uint32_t f = std::bit_cast<std::uint32_t>(x);
  const std::uint32_t sign = (f >> 16) & 0x8000u;
  const std::uint32_t abs = f & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // inf or NaN (kept quiet)
    return static_cast<std::uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x0200u | (abs >> 13) : 0u));
  }
  if (abs >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // rounds past 65504
  if (abs < 0x38800000u) {  // subnormal half (or zero): scale into the integer range
    const float magnitude = std::bit_cast<float>(abs) * 16777216.0f;  // 2^24: units of the smallest half
    const std::uint32_t units = static_cast<std::uint32_t>(magnitude);
    const float rest = magnitude - static_cast<float>(units);
    const std::uint32_t rounded = units + ((rest > 0.5f || (rest == 0.5f && (units & 1u))) ? 1u : 0u);
    return static_cast<std::uint16_t>(sign | rounded);
  }
  // Normal: rebias the exponent, round the 13 dropped mantissa bits to even.
  const std::uint32_t mantissa_lsb = (abs >> 13) & 1u;
  const std::uint32_t rounded = abs + 0xfffu + mantissa_lsb;
  return static_cast<std::uint16_t>(sign | ((rounded - 0x38000000u) >> 13));
}

}  // namespace sluice::ops
