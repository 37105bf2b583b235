#include <bit>
#include <cstdint>

#include "sluice/cuda/host_backend.h"
#include "sluice/half.h"

namespace sluice::cuda {

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
        static_cast<std::uint16_t*>(job.dst)[o] = float_to_half(v);
      } else {
        static_cast<float*>(job.dst)[o] = v;
      }
    }
  }
}

}  // namespace sluice::cuda
