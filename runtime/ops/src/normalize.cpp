// normalize and cast: an HWC image into a dense CHW or HWC tensor, one row at
// a time (NormalizeRows).
#include <cmath>
#include <cstdint>
#include <string>

#include "fail.h"
#include "normalize_rows.h"
#include "sluice/half.h"
#include "sluice/ops/normalize.h"

namespace sluice::ops {
namespace {

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
void fill_table(Out (&table)[4][256], int channels, const float* a, const float* b) {
  for (int k = 0; k < channels; ++k) {
    for (int i = 0; i < 256; ++i) table[k][i] = convert<Out>(static_cast<float>(i) * a[k] + b[k]);
  }
}

}  // namespace

template <>
const float* NormalizeRows::table<float>(int k) const { return f32_[k]; }
template <>
const std::uint16_t* NormalizeRows::table<std::uint16_t>(int k) const { return f16_[k]; }
template <>
const std::uint8_t* NormalizeRows::table<std::uint8_t>(int k) const { return u8_[k]; }

template <typename Out, typename In>
void NormalizeRows::write_row(const NormalizeRows& s, const void* row, int y) {
  const In* in = static_cast<const In*>(row);
  const int w = s.width_, c = s.channels_;
  const std::size_t plane = static_cast<std::size_t>(s.height_) * w;
  Out* dst = static_cast<Out*>(s.dst_);
  auto value = [&](int x, int k) {
    if constexpr (sizeof(In) == 1) {
      return s.table<Out>(k)[in[x * c + k]];
    } else {
      return convert<Out>(static_cast<float>(in[x * c + k]) * s.a_[k] + s.b_[k]);
    }
  };
  if (s.layout_ == Layout::chw && c == 3 && sizeof(In) == 1) {  // the common case, kept branch-free
    Out* r = dst + static_cast<std::size_t>(y) * w;
    Out* g = r + plane;
    Out* b = g + plane;
    const Out *tr = s.table<Out>(0), *tg = s.table<Out>(1), *tb = s.table<Out>(2);
    if (s.flip_) {
      for (int x = 0; x < w; ++x) {
        const In* p = in + (w - 1 - x) * 3;
        r[x] = tr[p[0]], g[x] = tg[p[1]], b[x] = tb[p[2]];
      }
    } else {
      for (int x = 0; x < w; ++x) {
        const In* p = in + x * 3;
        r[x] = tr[p[0]], g[x] = tg[p[1]], b[x] = tb[p[2]];
      }
    }
    return;
  }
  for (int x = 0; x < w; ++x) {
    const int sx = s.flip_ ? w - 1 - x : x;
    for (int k = 0; k < c; ++k) {
      const Out v = value(sx, k);
      if (s.layout_ == Layout::chw) {
        dst[k * plane + static_cast<std::size_t>(y) * w + x] = v;
      } else {
        dst[(static_cast<std::size_t>(y) * w + x) * c + k] = v;
      }
    }
  }
}

NormalizeRows::NormalizeRows(const Image& shape, void* dst, const NormalizeOptions& o)
    : height_(shape.height), width_(shape.width), channels_(shape.channels), layout_(o.layout), flip_(o.flip),
      dst_(dst) {
  if (dst == nullptr) fail_op("normalize", "no destination");
  const bool u8 = shape.dtype == DType::u8;
  // The default maps to [0, 1]; but into a uint8 output with no mean or std
  // either, [0, 1] would leave only 0 and 1: the values are kept instead.
  const bool plain = o.mean == NormalizeOptions{}.mean && o.std == NormalizeOptions{}.std;
  const float scale = o.scale != 0                       ? o.scale
                      : o.dtype == DType::u8 && plain ? (u8 ? 1.0f : 1.0f / 257)
                      : u8                            ? 1.0f / 255
                                                      : 1.0f / 65535;
  for (int k = 0; k < 4; ++k) a_[k] = 0, b_[k] = 0;
  for (int k = 0; k < shape.channels; ++k) {
    if (o.std[k] == 0 || !std::isfinite(o.std[k]) || !std::isfinite(o.mean[k])) {
      fail_op("normalize", "channel " + std::to_string(k) + " has mean " + std::to_string(o.mean[k]) +
                               " and std " + std::to_string(o.std[k]));
    }
    a_[k] = scale / o.std[k];
    b_[k] = -o.mean[k] / o.std[k];
  }
  switch (o.dtype) {
    case DType::f32:
      if (u8) fill_table(f32_, channels_, a_, b_);
      write_ = u8 ? write_row<float, std::uint8_t> : write_row<float, std::uint16_t>;
      break;
    case DType::f16:
      if (u8) fill_table(f16_, channels_, a_, b_);
      write_ = u8 ? write_row<std::uint16_t, std::uint8_t> : write_row<std::uint16_t, std::uint16_t>;
      break;
    case DType::u8:
      if (u8) fill_table(u8_, channels_, a_, b_);
      write_ = u8 ? write_row<std::uint8_t, std::uint8_t> : write_row<std::uint8_t, std::uint16_t>;
      break;
    default:
      fail_op("normalize", "writes float32, float16 or uint8, not " + std::string(dtype_name(o.dtype)));
  }
}

void normalize(const Image& src, void* dst, const NormalizeOptions& o) {
  check_image(src, "normalize");
  const NormalizeRows rows(src, dst, o);
  for (int y = 0; y < src.height; ++y) rows.write(src.row<std::byte>(y), y);
}

void cast(const Image& src, void* dst, DType dtype, Layout layout) {
  normalize(src, dst, NormalizeOptions{.dtype = dtype, .layout = layout, .scale = 1.0f});
}

}  // namespace sluice::ops
