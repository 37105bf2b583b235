#include "normalize_kernel.h"

#include <cuda_fp16.h>

#include <algorithm>

#include "normalize_pixel.h"

namespace sluice::cuda::detail {

namespace {

__device__ inline void store(float* out, std::int64_t i, float v) { out[i] = v; }
__device__ inline void store(std::uint16_t* out, std::int64_t i, float v) {
  out[i] = __half_as_ushort(__float2half_rn(v));
}

// One thread per pixel: it reads the pixel's `channels` bytes and writes its
// channels, next to each other, or one plane apart with hwc_to_chw (then
// neighbouring threads write neighbouring addresses of each plane).
// The arithmetic is normalize_on_host's (normalize_pixel.h).
template <typename Out>
__global__ void normalize_kernel(NormalizeJob job) {
  Out* out = static_cast<Out*>(job.dst);
  const std::int64_t total = job.samples * job.pixels;
  const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += step) {
    for (std::int64_t c = 0; c < job.channels; ++c) {
      store(out, normalize_index(job, i, c), normalize_value(job, i, c));
    }
  }
}

}  // namespace

cudaError_t launch_normalize(const NormalizeJob& job, cudaStream_t stream) {
  const std::int64_t total = job.samples * job.pixels;
  if (total == 0) return cudaSuccess;
  constexpr int threads = 256;
  const int blocks = static_cast<int>(std::min<std::int64_t>((total + threads - 1) / threads, 8192));
  if (job.to == DType::f16) {
    normalize_kernel<std::uint16_t><<<blocks, threads, 0, stream>>>(job);
  } else {
    normalize_kernel<float><<<blocks, threads, 0, stream>>>(job);
  }
  return cudaGetLastError();
}

}  // namespace sluice::cuda::detail
