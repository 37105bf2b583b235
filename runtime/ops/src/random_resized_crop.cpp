// random_resized_crop: torchvision's RandomResizedCrop.get_params.
#include <algorithm>
#include <cmath>
#include <string>

#include "fail.h"
#include "sluice/ops/geometry.h"

namespace sluice::ops {
namespace {

// Python's round(): half to even (the default floating-point rounding mode).
int round_even(double x) { return static_cast<int>(std::nearbyint(x)); }

}  // namespace

Rect random_resized_crop(int width, int height, UniformSource uniform, const RandomResizedCropOptions& o) {
  if (width <= 0 || height <= 0) {
    fail_op("random_resized_crop", "the image is " + std::to_string(width) + "x" + std::to_string(height));
  }
  if (!(o.scale_min > 0 && o.scale_min <= o.scale_max) || !(o.ratio_min > 0 && o.ratio_min <= o.ratio_max)) {
    fail_op("random_resized_crop", "scale and ratio must be ranges of positive numbers, low <= high");
  }
  const double area = static_cast<double>(width) * height;
  const double log_min = std::log(o.ratio_min), log_max = std::log(o.ratio_max);
  for (int attempt = 0; attempt < o.attempts; ++attempt) {
    const double target = area * (o.scale_min + (o.scale_max - o.scale_min) * uniform());
    const double ratio = std::exp(log_min + (log_max - log_min) * uniform());
    const int w = round_even(std::sqrt(target * ratio));
    const int h = round_even(std::sqrt(target / ratio));
    if (w > 0 && w <= width && h > 0 && h <= height) {
      const int y = std::min(height - h, static_cast<int>(uniform() * (height - h + 1)));
      const int x = std::min(width - w, static_cast<int>(uniform() * (width - w + 1)));
      return {x, y, w, h};
    }
  }
  const double in_ratio = static_cast<double>(width) / height;
  int w = width, h = height;
  if (in_ratio < o.ratio_min) {
    h = std::clamp(round_even(w / o.ratio_min), 1, height);
  } else if (in_ratio > o.ratio_max) {
    w = std::clamp(round_even(h * o.ratio_max), 1, width);
  }
  return {(width - w) / 2, (height - h) / 2, w, h};
}

}  // namespace sluice::ops
