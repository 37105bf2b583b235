// normalize and cast: an HWC image into a dense CHW or HWC tensor.
#include <cmath>
#include <cstdint>
#include <string>

#include "fail.h"
#include "sluice/half.h"
#include "sluice/ops/normalize.h"

namespace sluice::ops {
namespace {

struct Affine {  // out = in * a[c] + b[c]
  float a[4];
  float b[4];
};

template <typename Out>
Out convert(float v);
template <>
float convert<float>(float v) { return v; }
template <>
std::uint16_t convert<std::uint16_t>(float v) { return sluice::float_to_half(v); }
template <>
std::uint8_t convert<std::uint8_t>(float v) {
  if (!(v > 0.0f)) return 0;  // NaN too
  if (v >= 255.0f) return 255;
  return static_cast<std::uint8_t>(std::nearbyint(v));
}

template <typename Out>
void write(const Image& src, Out* dst, Layout layout, bool flip, auto&& value) {
  const int h = src.height, w = src.width, c = src.channels;
  const std::size_t plane = static_cast<std::size_t>(h) * w;
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      const int sx = flip ? w - 1 - x : x;
      for (int k = 0; k < c; ++k) {
        const Out v = value(y, sx, k);
        if (layout == Layout::chw) {
          dst[k * plane + static_cast<std::size_t>(y) * w + x] = v;
        } else {
          dst[(static_cast<std::size_t>(y) * w + x) * c + k] = v;
        }
      }
    }
  }
}

// uint8 input: one table of 256 outputs per channel.
template <typename Out>
void from_u8(const Image& src, Out* dst, const Affine& f, Layout layout, bool flip) {
  Out table[4][256];
  for (int k = 0; k < src.channels; ++k) {
    for (int i = 0; i < 256; ++i) table[k][i] = convert<Out>(static_cast<float>(i) * f.a[k] + f.b[k]);
  }
  const int c = src.channels;
  if (layout == Layout::chw && c == 3) {  // the common case, kept branch-free
    const int h = src.height, w = src.width;
    const std::size_t plane = static_cast<std::size_t>(h) * w;
    for (int y = 0; y < h; ++y) {
      const std::uint8_t* in = src.row<std::uint8_t>(y);
      Out* r = dst + static_cast<std::size_t>(y) * w;
      Out* g = r + plane;
      Out* b = g + plane;
      if (flip) {
        for (int x = 0; x < w; ++x) {
          const std::uint8_t* p = in + (w - 1 - x) * 3;
          r[x] = table[0][p[0]], g[x] = table[1][p[1]], b[x] = table[2][p[2]];
        }
      } else {
        for (int x = 0; x < w; ++x) {
          const std::uint8_t* p = in + x * 3;
          r[x] = table[0][p[0]], g[x] = table[1][p[1]], b[x] = table[2][p[2]];
        }
      }
    }
    return;
  }
  write(src, dst, layout, flip,
        [&](int y, int x, int k) { return table[k][src.row<std::uint8_t>(y)[x * c + k]]; });
}

template <typename Out>
void from_u16(const Image& src, Out* dst, const Affine& f, Layout layout, bool flip) {
  const int c = src.channels;
  write(src, dst, layout, flip, [&](int y, int x, int k) {
    return convert<Out>(static_cast<float>(src.row<std::uint16_t>(y)[x * c + k]) * f.a[k] + f.b[k]);
  });
}

template <typename Out>
void dispatch(const Image& src, void* dst, const Affine& f, Layout layout, bool flip) {
  if (src.dtype == DType::u8) {
    from_u8(src, static_cast<Out*>(dst), f, layout, flip);
  } else {
    from_u16(src, static_cast<Out*>(dst), f, layout, flip);
  }
}

}  // namespace

void normalize(const Image& src, void* dst, const NormalizeOptions& o) {
  check_image(src, "normalize");
  if (dst == nullptr) fail_op("normalize", "no destination");
  const float scale = o.scale != 0 ? o.scale : (src.dtype == DType::u8 ? 1.0f / 255 : 1.0f / 65535);
  Affine f{};
  for (int k = 0; k < src.channels; ++k) {
    if (o.std[k] == 0 || !std::isfinite(o.std[k]) || !std::isfinite(o.mean[k])) {
      fail_op("normalize", "channel " + std::to_string(k) + " has mean " + std::to_string(o.mean[k]) +
                               " and std " + std::to_string(o.std[k]));
    }
    f.a[k] = scale / o.std[k];
    f.b[k] = -o.mean[k] / o.std[k];
  }
  switch (o.dtype) {
    case DType::f32: return dispatch<float>(src, dst, f, o.layout, o.flip);
    case DType::f16: return dispatch<std::uint16_t>(src, dst, f, o.layout, o.flip);
    case DType::u8: return dispatch<std::uint8_t>(src, dst, f, o.layout, o.flip);
    default:
      fail_op("normalize", "writes float32, float16 or uint8, not " + std::string(dtype_name(o.dtype)));
  }
}

void cast(const Image& src, void* dst, DType dtype, Layout layout) {
  normalize(src, dst, NormalizeOptions{.dtype = dtype, .layout = layout, .scale = 1.0f});
}

}  // namespace sluice::ops
