// Resampler: Pillow's separable convolution resize (libImaging/Resample.c),
// restated: coefficients per output pixel, a horizontal pass over the rows the
// vertical pass needs, then a vertical pass that accumulates whole rows.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

#include "fail.h"
#include "sluice/ops/geometry.h"

namespace sluice::ops {
namespace {

constexpr int kPrecisionBits = 32 - 8 - 2;

double box_filter(double x) { return (x > -0.5 && x <= 0.5) ? 1.0 : 0.0; }
double triangle_filter(double x) {
  if (x < 0) x = -x;
  return x < 1.0 ? 1.0 - x : 0.0;
}

// uint8: 22-bit fixed point, bit-identical to Pillow.
struct FixedU8 {
  using Pixel = std::uint8_t;
  using Acc = std::int32_t;
  static Acc start() { return Acc{1} << (kPrecisionBits - 1); }
  static const int* weights(const std::vector<int>& fixed, const std::vector<float>&) { return fixed.data(); }
  static Pixel store(Acc s) {
    if (s <= 0) return 0;
    if (s >= (Acc{1} << kPrecisionBits << 8)) return 255;
    return static_cast<Pixel>(s >> kPrecisionBits);
  }
};

// uint16: single precision, rounded to nearest.
struct FloatU16 {
  using Pixel = std::uint16_t;
  using Acc = float;
  static Acc start() { return 0.5f; }
  static const float* weights(const std::vector<int>&, const std::vector<float>& single) { return single.data(); }
  static Pixel store(Acc s) { return static_cast<Pixel>(std::clamp(s, 0.0f, 65535.0f)); }
};

// out rows [0, rows) = src rows [first, first + rows), resampled across.
template <typename K, int C>
void horizontal(const Image& src, int first, int rows, const std::vector<int>& bounds,
                const auto* weights, int taps, const Image& out) {
  using P = typename K::Pixel;
  for (int y = 0; y < rows; ++y) {
    const P* in = src.row<P>(first + y);
    P* o = out.row<P>(y);
    for (int x = 0; x < out.width; ++x) {
      const int xmin = bounds[2 * x], n = bounds[2 * x + 1];
      const auto* k = weights + static_cast<std::size_t>(x) * taps;
      const P* p = in + static_cast<std::size_t>(xmin) * C;
      typename K::Acc s[C];
      for (int c = 0; c < C; ++c) s[c] = K::start();
      for (int t = 0; t < n; ++t) {
        for (int c = 0; c < C; ++c) s[c] += static_cast<typename K::Acc>(p[t * C + c]) * k[t];
      }
      for (int c = 0; c < C; ++c) o[x * C + c] = K::store(s[c]);
    }
  }
}

// Each out row is a weighted sum of whole src rows.
template <typename K>
void vertical(const Image& src, const std::vector<int>& bounds, const auto* weights, int taps,
              const Image& out, typename K::Acc* sums) {
  using P = typename K::Pixel;
  const std::size_t n_elements = static_cast<std::size_t>(out.width) * out.channels;
  for (int y = 0; y < out.height; ++y) {
    const int ymin = bounds[2 * y], n = bounds[2 * y + 1];
    const auto* k = weights + static_cast<std::size_t>(y) * taps;
    std::fill(sums, sums + n_elements, K::start());
    for (int t = 0; t < n; ++t) {
      const P* in = src.row<P>(ymin + t);
      const typename K::Acc w = k[t];
      for (std::size_t i = 0; i < n_elements; ++i) sums[i] += static_cast<typename K::Acc>(in[i]) * w;
    }
    P* o = out.row<P>(y);
    for (std::size_t i = 0; i < n_elements; ++i) o[i] = K::store(sums[i]);
  }
}

template <typename K>
void run_horizontal(const Image& src, int first, int rows, const std::vector<int>& bounds,
                    const auto* weights, int taps, const Image& out) {
  switch (src.channels) {
    case 1: return horizontal<K, 1>(src, first, rows, bounds, weights, taps, out);
    case 2: return horizontal<K, 2>(src, first, rows, bounds, weights, taps, out);
    case 3: return horizontal<K, 3>(src, first, rows, bounds, weights, taps, out);
    default: return horizontal<K, 4>(src, first, rows, bounds, weights, taps, out);
  }
}

}  // namespace

void Resampler::compute(Coefficients& c, int in_size, double in0, double in1, int out_size, Filter filter) {
  const double support_1 = filter == Filter::area ? 0.5 : 1.0;
  double (*fn)(double) = filter == Filter::area ? box_filter : triangle_filter;
  const double scale = (in1 - in0) / out_size;
  const double filterscale = std::max(scale, 1.0);
  const double support = support_1 * filterscale;
  c.taps = static_cast<int>(std::ceil(support)) * 2 + 1;
  const std::size_t total = static_cast<std::size_t>(out_size) * c.taps;
  c.bounds.resize(2 * static_cast<std::size_t>(out_size));
  c.weights.assign(total, 0.0);
  c.fixed.resize(total);
  c.single.resize(total);
  for (int xx = 0; xx < out_size; ++xx) {
    const double center = in0 + (xx + 0.5) * scale;
    const double ss = 1.0 / filterscale;
    const int xmin = std::max(static_cast<int>(center - support + 0.5), 0);
    const int xmax = std::min(static_cast<int>(center + support + 0.5), in_size) - xmin;
    double* k = &c.weights[static_cast<std::size_t>(xx) * c.taps];
    double ww = 0.0;
    for (int x = 0; x < xmax; ++x) {
      k[x] = fn((x + xmin - center + 0.5) * ss);
      ww += k[x];
    }
    for (int x = 0; x < xmax; ++x) {
      if (ww != 0.0) k[x] /= ww;
    }
    c.bounds[2 * xx] = xmin;
    c.bounds[2 * xx + 1] = std::max(xmax, 0);
  }
  for (std::size_t i = 0; i < total; ++i) {
    const double w = c.weights[i];
    c.fixed[i] = static_cast<int>(w < 0 ? -0.5 + w * (1 << kPrecisionBits) : 0.5 + w * (1 << kPrecisionBits));
    c.single[i] = static_cast<float>(w);
  }
}

void Resampler::resize(const Image& src, const Image& dst, Filter filter) {
  resize(src, Box{0, 0, static_cast<double>(src.width), static_cast<double>(src.height)}, dst, filter);
}

void Resampler::resize(const Image& full, const Box& box, const Image& dst, Filter filter) {
  check_image(full, "resize");
  check_image(dst, "resize");
  if (full.channels != dst.channels || full.dtype != dst.dtype) {
    fail_op("resize", "source and destination differ in channels or dtype");
  }
  if (!(box.x0 >= 0 && box.y0 >= 0 && box.x1 <= full.width && box.y1 <= full.height && box.x0 < box.x1 &&
        box.y0 < box.y1)) {
    fail_op("resize", "the box (" + std::to_string(box.x0) + ", " + std::to_string(box.y0) + ", " +
                          std::to_string(box.x1) + ", " + std::to_string(box.y1) + ") is not inside a " +
                          std::to_string(full.width) + "x" + std::to_string(full.height) + " image");
  }
  // Read only the pixels the box touches, as a crop followed by a resize would.
  const int ex0 = static_cast<int>(std::floor(box.x0)), ey0 = static_cast<int>(std::floor(box.y0));
  const int ex1 = std::min(static_cast<int>(std::ceil(box.x1)), full.width);
  const int ey1 = std::min(static_cast<int>(std::ceil(box.y1)), full.height);
  const Image src = crop(full, Rect{ex0, ey0, ex1 - ex0, ey1 - ey0});
  const double x0 = box.x0 - ex0, x1 = box.x1 - ex0, y0 = box.y0 - ey0, y1 = box.y1 - ey0;

  const bool need_horizontal = dst.width != src.width || x0 != 0 || x1 != src.width;
  const bool need_vertical = dst.height != src.height || y0 != 0 || y1 != src.height;
  if (!need_horizontal && !need_vertical) return copy(src, dst);

  compute(horizontal_, src.width, x0, x1, dst.width, filter);
  compute(vertical_, src.height, y0, y1, dst.height, filter);
  const int first = vertical_.bounds[0];
  const int last = vertical_.bounds[2 * dst.height - 2] + vertical_.bounds[2 * dst.height - 1];
  const bool u8 = src.dtype == DType::u8;

  auto horizontal_pass = [&](const Image& out, int from, int rows) {
    if (u8) {
      run_horizontal<FixedU8>(src, from, rows, horizontal_.bounds, horizontal_.fixed.data(), horizontal_.taps, out);
    } else {
      run_horizontal<FloatU16>(src, from, rows, horizontal_.bounds, horizontal_.single.data(), horizontal_.taps, out);
    }
  };
  if (!need_vertical) return horizontal_pass(dst, 0, dst.height);

  Image between = src;
  if (need_horizontal) {
    for (int y = 0; y < dst.height; ++y) vertical_.bounds[2 * y] -= first;
    between.width = dst.width;
    between.height = last - first;
    between.stride = between.row_bytes();
    between_.resize(between.stride * between.height);
    between.data = between_.data();
    horizontal_pass(between, first, between.height);
  }
  const std::size_t elements = static_cast<std::size_t>(dst.width) * dst.channels;
  row_sums_.resize(elements * 4);
  if (u8) {
    vertical<FixedU8>(between, vertical_.bounds, vertical_.fixed.data(), vertical_.taps, dst,
                      reinterpret_cast<std::int32_t*>(row_sums_.data()));
  } else {
    vertical<FloatU16>(between, vertical_.bounds, vertical_.single.data(), vertical_.taps, dst,
                       reinterpret_cast<float*>(row_sums_.data()));
  }
}

}  // namespace sluice::ops
