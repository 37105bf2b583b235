// normalize_pixel.h: the arithmetic of a NormalizeJob, one channel of one pixel
// at a time, written once for both sides: the host loop (normalize_host.cpp,
// built by the C++ compiler) and the CUDA kernel (normalize_kernel.cu, nvcc).
// Both call these two functions, so their results match bit for bit; only the
// float-to-float16 store differs (sluice/half.h vs __float2half_rn, both
// round-to-nearest-even).
#pragma once

#include <cstdint>

#include "sluice/cuda/normalize_job.h"

// __host__ __device__ under nvcc; nothing for the C++ compiler, which has no
// such qualifiers.
#if defined(__CUDACC__)
#define SLUICE_HD __host__ __device__
#else
#define SLUICE_HD
#endif

namespace sluice::cuda::detail {

// Channel c of pixel i (0 <= i < samples * pixels), normalized:
// (in - mean) * inv_std, with channel c's parameters or the single pair.
SLUICE_HD inline float normalize_value(const NormalizeJob& job, std::int64_t i, std::int64_t c) {
  const int k = job.param_count == 1 ? 0 : static_cast<int>(c);
  return (static_cast<float>(job.src[i * job.channels + c]) - job.mean[k]) * job.inv_std[k];
}

// Where that value goes in job.dst, in elements: next to the pixel's other
// channels, or one plane apart with hwc_to_chw.
SLUICE_HD inline std::int64_t normalize_index(const NormalizeJob& job, std::int64_t i, std::int64_t c) {
  if (!job.hwc_to_chw) return i * job.channels + c;
  const std::int64_t sample = i / job.pixels;
  const std::int64_t pixel = i - sample * job.pixels;
  return (sample * job.channels + c) * job.pixels + pixel;
}

}  // namespace sluice::cuda::detail
