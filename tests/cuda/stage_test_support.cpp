#include "stage_test_support.h"

#include "skip.h"

#include <catch2/catch.hpp>

#include <string>

#include "sluice/cuda/device.h"
#include "sluice/producer.h"

namespace sluice::cuda::test {

Options image_options(std::uint64_t n, std::uint32_t batch, std::uint32_t workers, std::int64_t h, std::int64_t w,
                      std::int64_t c) {
  Options o;
  o.dataset_size = n;
  o.batch_size = batch;
  o.workers = workers;
  o.fields = {{"image", DType::u8, {h, w, c}}, {"label", DType::i32, {}}};
  const std::int64_t pixels = h * w * c;
  o.producer = per_sample([pixels](const SampleRef& s) {
    auto* image = s.as<std::uint8_t>(0);
    for (std::int64_t k = 0; k < pixels; ++k) image[k] = pixel_value(s.index, k);
    *s.as<std::int32_t>(1) = static_cast<std::int32_t>(s.index);
  });
  return o;
}

bool have_gpu_or_warn() {
  std::string why;
  if (cuda_device_count(&why) > 0) return true;
  sluice::test::exit_if_skip_code("no CUDA device: " + why);
  WARN("no CUDA device: " << why << "; skipping this GPU test");
  return false;
}

}  // namespace sluice::cuda::test
