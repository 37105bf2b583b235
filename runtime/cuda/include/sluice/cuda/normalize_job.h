// sluice/cuda/normalize_job.h: one Normalize applied to one batch, as a backend
// runs it. Plain data, also passed by value to the CUDA kernel.
//
// Input: `samples` samples of `pixels` x `channels` uint8 values, C order.
// Output: the same values as float32 or float16 (IEEE binary16 bits),
// (in - mean[c]) * inv_std[c], laid out [samples, pixels, channels], or
// [samples, channels, pixels] with hwc_to_chw.
#pragma once

#include <cstdint>

#include "sluice/dtype.h"

namespace sluice::cuda {

// Most channels a Normalize may give per-channel mean and stddev for.
inline constexpr int max_normalize_channels = 16;

struct NormalizeJob {
  const std::uint8_t* src = nullptr;
  void* dst = nullptr;
  DType to = DType::f32;           // f32 or f16
  std::int64_t samples = 0;
  std::int64_t pixels = 1;         // product of the per-sample dims but the last
  std::int64_t channels = 1;       // the last per-sample dim (1 for a scalar)
  bool hwc_to_chw = false;
  int param_count = 1;             // 1: mean[0], inv_std[0] for every channel; else == channels
  float mean[max_normalize_channels] = {};
  float inv_std[max_normalize_channels] = {};
};

}  // namespace sluice::cuda
