// Resampler: Pillow's separable convolution resize (libImaging/Resample.c),
// restated: coefficients per output pixel, a horizontal pass over the rows the
// vertical pass needs, then a vertical pass that accumulates whole rows.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

#include "fail.h"
#include "normalize_rows.h"
#include "sluice/ops/geometry.h"

namespace sluice::ops {
namespace {

constexpr int kPrecisionBits = 32 - 8 - 2;

double box_filter(double x) { return (x > -0.5 && x <= 0.5) ? 1.0 : 0.0; }
double triangle_filter(double x) {
  if (x < 0) x = -x;
  return x < 1.0 ? 1.0 - x : 0.0;
}

// The hot loops of the uint8 path, written for the auto-vectorizer (checked
// with -fopt-info-vec; CMakeLists.txt gives this file the cost model that
// lets -O2 vectorize them) and compiled twice: for AVX2 and for the baseline
// x86-64, picked once at load time (target_clones). Not under ThreadSanitizer:
// the clones' resolver runs during relocation, before TSan's runtime exists,
// and its instrumented entry crashes the program at load.
#if defined(__x86_64__) && !defined(__clang__) && !defined(__SANITIZE_THREAD__)
#define SLUICE_VECTOR_CLONES [[gnu::target_clones("avx2", "default")]]
#else
#define SLUICE_VECTOR_CLONES
#endif

std::uint8_t store_u8(std::int32_t s) {
  if (s <= 0) return 0;
  if (s >= (std::int32_t{1} << kPrecisionBits << 8)) return 255;
  return static_cast<std::uint8_t>(s >> kPrecisionBits);
}

// One row of 3-channel pixels resampled across, a pixel's channels in one
// vector (GCC/Clang vector extensions): each tap reads 4 bytes, the pixel and
// the next one's first byte, whose sum in the 4th lane is dropped; a tap whose
// 4th byte would lie past the row reads 3.
using Lanes = std::int32_t __attribute__((vector_size(16)));
using Bytes = std::uint8_t __attribute__((vector_size(4)));

SLUICE_VECTOR_CLONES
void horizontal_rgb8(const std::uint8_t* in, int in_width, std::uint8_t* out, int out_width, const int* bounds,
                     const std::int32_t* weights, int taps) {
  constexpr std::int32_t half = std::int32_t{1} << (kPrecisionBits - 1);
  for (int x = 0; x < out_width; ++x) {
    const int xmin = bounds[2 * x], n = bounds[2 * x + 1];
    const std::int32_t* k = weights + static_cast<std::size_t>(x) * taps;
    const std::uint8_t* p = in + static_cast<std::size_t>(xmin) * 3;
    const int whole = xmin + n < in_width ? n : n - 1;  // taps that may read 4 bytes
    Lanes s = {half, half, half, half};
    int t = 0;
    for (; t < whole; ++t) {
      Bytes b;
      std::memcpy(&b, p + t * 3, 4);
      s += __builtin_convertvector(b, Lanes) * k[t];
    }
    for (; t < n; ++t) {
      Bytes b = {};
      std::memcpy(&b, p + t * 3, 3);
      s += __builtin_convertvector(b, Lanes) * k[t];
    }
    for (int c = 0; c < 3; ++c) out[x * 3 + c] = store_u8(s[c]);
  }
}

SLUICE_VECTOR_CLONES
void accumulate_u8(std::int32_t* __restrict sums, const std::uint8_t* __restrict in, std::size_t n, std::int32_t w) {
  for (std::size_t i = 0; i < n; ++i) sums[i] += static_cast<std::int32_t>(in[i]) * w;
}

SLUICE_VECTOR_CLONES
void store_row_u8(std::uint8_t* __restrict out, const std::int32_t* __restrict sums, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) out[i] = store_u8(sums[i]);
}

// uint8: 22-bit fixed point, bit-identical to Pillow.
struct FixedU8 {
  using Pixel = std::uint8_t;
  using Acc = std::int32_t;
  static Acc start() { return Acc{1} << (kPrecisionBits - 1); }
  static const int* weights(const std::vector<int>& fixed, const std::vector<float>&) { return fixed.data(); }
  static Pixel store(Acc s) { return store_u8(s); }
  static void accumulate(Acc* sums, const Pixel* in, std::size_t n, Acc w) { accumulate_u8(sums, in, n, w); }
  static void store_row(Pixel* out, const Acc* sums, std::size_t n) { store_row_u8(out, sums, n); }
};

// uint16: single precision, rounded to nearest.
struct FloatU16 {
  using Pixel = std::uint16_t;
  using Acc = float;
  static Acc start() { return 0.5f; }
  static const float* weights(const std::vector<int>&, const std::vector<float>& single) { return single.data(); }
  static Pixel store(Acc s) { return static_cast<Pixel>(std::clamp(s, 0.0f, 65535.0f)); }
  static void accumulate(Acc* sums, const Pixel* in, std::size_t n, Acc w) {
    for (std::size_t i = 0; i < n; ++i) sums[i] += static_cast<Acc>(in[i]) * w;
  }
  static void store_row(Pixel* out, const Acc* sums, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) out[i] = store(sums[i]);
  }
};

// out rows [0, rows) = src rows [first, first + rows), resampled across.
template <typename K, int C>
void horizontal(const Image& src, int first, int rows, const std::vector<int>& bounds,
                const auto* weights, int taps, const Image& out) {
  using P = typename K::Pixel;
  for (int y = 0; y < rows; ++y) {
    const P* in = src.row<P>(first + y);
    P* o = out.row<P>(y);
    if constexpr (C == 3 && std::is_same_v<K, FixedU8>) {
      horizontal_rgb8(in, src.width, o, out.width, bounds.data(), weights, taps);
      continue;
    }
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

// Each out row is a weighted sum of whole src rows: written to row(y), then
// handed to emit(y, that row) while it is in cache.
template <typename K>
void vertical(const Image& src, const std::vector<int>& bounds, const auto* weights, int taps, int out_height,
              std::size_t n_elements, typename K::Acc* sums, const auto& row, const auto& emit) {
  using P = typename K::Pixel;
  using Acc = typename K::Acc;
  for (int y = 0; y < out_height; ++y) {
    const int ymin = bounds[2 * y], n = bounds[2 * y + 1];
    const auto* k = weights + static_cast<std::size_t>(y) * taps;
    std::fill(sums, sums + n_elements, K::start());
    for (int t = 0; t < n; ++t) K::accumulate(sums, src.row<P>(ymin + t), n_elements, static_cast<Acc>(k[t]));
    P* o = row(y);
    K::store_row(o, sums, n_elements);
    emit(y, o);
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

Image Resampler::region(const Image& full, const Box& box, Box& inside) {
  check_image(full, "resize");
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
  inside = {box.x0 - ex0, box.y0 - ey0, box.x1 - ex0, box.y1 - ey0};
  return crop(full, Rect{ex0, ey0, ex1 - ex0, ey1 - ey0});
}

void Resampler::horizontal_pass(const Image& src, int first, const Image& out) {
  if (src.dtype == DType::u8) {
    run_horizontal<FixedU8>(src, first, out.height, horizontal_.bounds, horizontal_.fixed.data(), horizontal_.taps,
                            out);
  } else {
    run_horizontal<FloatU16>(src, first, out.height, horizontal_.bounds, horizontal_.single.data(),
                             horizontal_.taps, out);
  }
}

Image Resampler::rows_for_vertical(const Image& src, int out_width, bool need_horizontal) {
  if (!need_horizontal) return src;
  const int rows = static_cast<int>(vertical_.bounds.size() / 2);
  const int first = vertical_.bounds[0];
  const int last = vertical_.bounds[2 * rows - 2] + vertical_.bounds[2 * rows - 1];
  for (int y = 0; y < rows; ++y) vertical_.bounds[2 * y] -= first;
  Image between = src;
  between.width = out_width;
  between.height = last - first;
  between.stride = between.row_bytes();
  between_.resize(between.stride * between.height);
  between.data = between_.data();
  horizontal_pass(src, first, between);
  return between;
}

void Resampler::vertical_pass(const Image& between, int out_height, const auto& row, const auto& emit) {
  const std::size_t elements = static_cast<std::size_t>(between.width) * between.channels;
  row_sums_.resize(elements * 4);
  if (between.dtype == DType::u8) {
    vertical<FixedU8>(between, vertical_.bounds, vertical_.fixed.data(), vertical_.taps, out_height, elements,
                      reinterpret_cast<std::int32_t*>(row_sums_.data()),
                      [&](int y) { return reinterpret_cast<std::uint8_t*>(row(y)); }, emit);
  } else {
    vertical<FloatU16>(between, vertical_.bounds, vertical_.single.data(), vertical_.taps, out_height, elements,
                       reinterpret_cast<float*>(row_sums_.data()),
                       [&](int y) { return reinterpret_cast<std::uint16_t*>(row(y)); }, emit);
  }
}

void Resampler::resize(const Image& full, const Box& box, const Image& dst, Filter filter) {
  check_image(dst, "resize");
  if (full.channels != dst.channels || full.dtype != dst.dtype) {
    fail_op("resize", "source and destination differ in channels or dtype");
  }
  Box in;
  const Image src = region(full, box, in);
  const bool need_horizontal = dst.width != src.width || in.x0 != 0 || in.x1 != src.width;
  const bool need_vertical = dst.height != src.height || in.y0 != 0 || in.y1 != src.height;
  if (!need_horizontal && !need_vertical) return copy(src, dst);

  compute(horizontal_, src.width, in.x0, in.x1, dst.width, filter);
  compute(vertical_, src.height, in.y0, in.y1, dst.height, filter);
  if (!need_vertical) return horizontal_pass(src, 0, dst);
  const Image between = rows_for_vertical(src, dst.width, need_horizontal);
  vertical_pass(between, dst.height, [&](int y) { return dst.row<std::byte>(y); }, [](int, const void*) {});
}

void Resampler::resize_normalize(const Image& full, const Box& box, int out_height, int out_width, void* dst,
                                 const NormalizeOptions& options, Filter filter) {
  Box in;
  const Image src = region(full, box, in);
  if (out_height <= 0 || out_width <= 0) {
    fail_op("resize", "the output is " + std::to_string(out_width) + "x" + std::to_string(out_height));
  }
  const NormalizeRows rows(packed_image(nullptr, out_height, out_width, src.channels, src.dtype), dst, options);
  compute(horizontal_, src.width, in.x0, in.x1, out_width, filter);
  compute(vertical_, src.height, in.y0, in.y1, out_height, filter);
  // Both passes always run: a pass at the same size with the box on pixel
  // edges has weights 1 and 0, which reproduce the pixels exactly.
  const Image between = rows_for_vertical(src, out_width, true);
  out_row_.resize(between.row_bytes());
  vertical_pass(between, out_height, [&](int) { return out_row_.data(); },
                [&](int y, const void* row) { rows.write(row, y); });
}

}  // namespace sluice::ops
