// The normalize arithmetic (the host kernel, which the CUDA kernel is
// checked against in gpu_stage_test.cpp).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "sluice/cuda/host_backend.h"
#include "sluice/half.h"

using namespace sluice;
using namespace sluice::cuda;

TEST_CASE("normalize_on_host: per-channel float32, HWC to CHW", "[normalize]") {
  const int h = 2, w = 3, c = 3, n = 2;
  std::vector<std::uint8_t> in(n * h * w * c);
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<std::uint8_t>(i * 5);
  std::vector<float> out(in.size(), -1.0f);
  NormalizeJob job;
  job.src = in.data();
  job.dst = out.data();
  job.samples = n;
  job.pixels = h * w;
  job.channels = c;
  job.hwc_to_chw = true;
  job.param_count = 3;
  const float mean[3] = {10, 20, 30}, stddev[3] = {2, 4, 8};
  for (int k = 0; k < 3; ++k) {
    job.mean[k] = mean[k];
    job.inv_std[k] = 1.0f / stddev[k];
  }
  normalize_on_host(job);
  for (int s = 0; s < n; ++s)
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x)
        for (int k = 0; k < c; ++k) {
          const float v = in[((s * h + y) * w + x) * c + k];
          CHECK(out[((s * c + k) * h + y) * w + x] == (v - mean[k]) * (1.0f / stddev[k]));
        }
}

TEST_CASE("normalize_on_host: one mean and stddev, float16, layout kept", "[normalize]") {
  std::vector<std::uint8_t> in = {0, 128, 255, 64, 1, 2};
  std::vector<std::uint16_t> out(in.size());
  NormalizeJob job;
  job.src = in.data();
  job.dst = out.data();
  job.to = DType::f16;
  job.samples = 2;
  job.pixels = 1;
  job.channels = 3;
  job.mean[0] = 127.5f;
  job.inv_std[0] = 1.0f / 127.5f;
  normalize_on_host(job);
  for (std::size_t i = 0; i < in.size(); ++i) {
    CHECK(out[i] == sluice::float_to_half((static_cast<float>(in[i]) - 127.5f) * (1.0f / 127.5f)));
  }
  CHECK(out[0] == 0xbc00);  // -1
  CHECK(out[2] == 0x3c00);  // +1
}
