#include <bit>
#include <cstdint>

#include "sluice/cuda/host_backend.h"

namespace sluice::cuda {

std::uint16_t float_to_half_bits(float f) {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  const std::uint32_t sign = (x >> 16) & 0x8000u;
  const std::uint32_t exponent = (x >> 23) & 0xffu;
  std::uint32_t mantissa = x & 0x7fffffu;
  if (exponent == 0xffu) {  // infinity, or NaN (kept quiet)
    return static_cast<std::uint16_t>(sign | 0x7c00u | (mantissa ? 0x200u : 0u));
  }
  const int e = static_cast<int>(exponent) - 127 + 15;  // the half's biased exponent
  if (e >= 31) return static_cast<std::uint16_t>(sign | 0x7c00u);  // overflow: infinity
  std::uint32_t half = 0;
  std::uint32_t rest = 0;      // the bits shifted out
  std::uint32_t halfway = 0;   // rest == halfway is a tie
  if (e <= 0) {  // a subnormal half, or zero
    if (e < -10) return static_cast<std::uint16_t>(sign);
    mantissa |= 0x800000u;  // the implicit leading 1
    const int shift = 14 - e;
    half = mantissa >> shift;
    rest = mantissa & ((1u << shift) - 1);
    halfway = 1u << (shift - 1);
  } else {
    half = (static_cast<std::uint32_t>(e) << 10) | (mantissa >> 13);
    rest = mantissa & 0x1fffu;
    halfway = 0x1000u;
  }
  // Round to nearest, ties to even; a carry may reach the exponent (and
  // infinity), which is the correctly rounded result.
  if (rest > halfway || (rest == halfway && (half & 1u))) ++half;
  return static_cast<std::uint16_t>(sign | half);
}

// Same arithmetic as the CUDA kernel (normalize_kernel.cu).
void normalize_on_host(const NormalizeJob& job) {
  const std::int64_t total = job.samples * job.pixels;
  for (std::int64_t i = 0; i < total; ++i) {
    const std::uint8_t* in = job.src + i * job.channels;
    const std::int64_t sample = i / job.pixels;
    const std::int64_t pixel = i - sample * job.pixels;
    for (std::int64_t c = 0; c < job.channels; ++c) {
      const int k = job.param_count == 1 ? 0 : static_cast<int>(c);
      const float v = (static_cast<float>(in[c]) - job.mean[k]) * job.inv_std[k];
      const std::int64_t o =
          job.hwc_to_chw ? (sample * job.channels + c) * job.pixels + pixel : i * job.channels + c;
      if (job.to == DType::f16) {
        static_cast<std::uint16_t*>(job.dst)[o] = float_to_half_bits(v);
      } else {
        static_cast<float*>(job.dst)[o] = v;
      }
    }
  }
}

}  // namespace sluice::cuda
