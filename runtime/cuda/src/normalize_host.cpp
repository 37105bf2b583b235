#include <bit>
#include <cstdint>

#include "normalize_pixel.h"
#include "sluice/cuda/host_backend.h"
#include "sluice/half.h"

namespace sluice::cuda {

// The arithmetic is the CUDA kernel's (normalize_pixel.h).
void normalize_on_host(const NormalizeJob& job) {
  const std::int64_t total = job.samples * job.pixels;
  for (std::int64_t i = 0; i < total; ++i) {
    for (std::int64_t c = 0; c < job.channels; ++c) {
      const float v = detail::normalize_value(job, i, c);
      const std::int64_t o = detail::normalize_index(job, i, c);
      if (job.to == DType::f16) {
        static_cast<std::uint16_t*>(job.dst)[o] = float_to_half(v);
      } else {
        static_cast<float*>(job.dst)[o] = v;
      }
    }
  }
}

}  // namespace sluice::cuda
