#include "color.h"

#include <cstdint>

namespace sluice::ops {
namespace {

// Values in the source's scale, as r, g, b, a.
template <StoredLayout L, typename S>
void load(const S* p, std::uint32_t& r, std::uint32_t& g, std::uint32_t& b, std::uint32_t& a,
          std::uint32_t max) {
  if constexpr (L == StoredLayout::gray) {
    r = g = b = p[0], a = max;
  } else if constexpr (L == StoredLayout::gray_alpha) {
    r = g = b = p[0], a = p[1];
  } else if constexpr (L == StoredLayout::rgb) {
    r = p[0], g = p[1], b = p[2], a = max;
  } else if constexpr (L == StoredLayout::rgba) {
    r = p[0], g = p[1], b = p[2], a = p[3];
  } else {  // stored C', M', Y', K' = max - C, ...: R = K' - K' (max - C') / max
    auto muldiv = [max](std::uint32_t x, std::uint32_t y) {
      const std::uint64_t t = static_cast<std::uint64_t>(x) * y + (max + 1) / 2;
      return static_cast<std::uint32_t>(max == 255 ? (t + (t >> 8)) >> 8 : t / max);
    };
    const std::uint32_t k = p[3];
    r = k - muldiv(max - p[0], k), g = k - muldiv(max - p[1], k), b = k - muldiv(max - p[2], k), a = max;
  }
}

template <typename S, typename D>
D rescale(std::uint32_t v) {
  if constexpr (sizeof(S) == sizeof(D)) {
    return static_cast<D>(v);
  } else if constexpr (sizeof(S) == 1) {
    return static_cast<D>(v * 257);
  } else {
    return static_cast<D>((v * 255 + 32895) >> 16);
  }
}

template <StoredLayout L, typename S, typename D, int C>
void convert(const Image& src, const Image& dst) {
  constexpr int kIn = L == StoredLayout::gray ? 1 : L == StoredLayout::gray_alpha ? 2 : L == StoredLayout::rgb ? 3 : 4;
  const std::uint32_t max = sizeof(S) == 1 ? 255 : 65535;
  for (int y = 0; y < src.height; ++y) {
    const S* in = src.row<S>(y);
    D* out = dst.row<D>(y);
    for (int x = 0; x < src.width; ++x, in += kIn, out += C) {
      std::uint32_t r, g, b, a;
      load<L>(in, r, g, b, a, max);
      if constexpr (C == 1) {
        const std::uint64_t luma = (static_cast<std::uint64_t>(r) * 19595 + g * 38470ull + b * 7471ull + 0x8000) >> 16;
        out[0] = rescale<S, D>(static_cast<std::uint32_t>(luma));
      } else {
        out[0] = rescale<S, D>(r), out[1] = rescale<S, D>(g), out[2] = rescale<S, D>(b);
        if constexpr (C == 4) out[3] = rescale<S, D>(a);
      }
    }
  }
}

template <StoredLayout L, typename S, typename D>
void by_channels(const Image& src, const Image& dst) {
  switch (dst.channels) {
    case 1: return convert<L, S, D, 1>(src, dst);
    case 3: return convert<L, S, D, 3>(src, dst);
    default: return convert<L, S, D, 4>(src, dst);
  }
}

template <typename S, typename D>
void by_layout(const Image& src, StoredLayout layout, const Image& dst) {
  switch (layout) {
    case StoredLayout::gray: return by_channels<StoredLayout::gray, S, D>(src, dst);
    case StoredLayout::gray_alpha: return by_channels<StoredLayout::gray_alpha, S, D>(src, dst);
    case StoredLayout::rgb: return by_channels<StoredLayout::rgb, S, D>(src, dst);
    case StoredLayout::rgba: return by_channels<StoredLayout::rgba, S, D>(src, dst);
    case StoredLayout::cmyk_inverted: return by_channels<StoredLayout::cmyk_inverted, S, D>(src, dst);
  }
}

}  // namespace

void convert_pixels(const Image& src, StoredLayout layout, const Image& dst) {
  const bool in8 = src.dtype == DType::u8, out8 = dst.dtype == DType::u8;
  if (in8 && out8) return by_layout<std::uint8_t, std::uint8_t>(src, layout, dst);
  if (in8) return by_layout<std::uint8_t, std::uint16_t>(src, layout, dst);
  if (out8) return by_layout<std::uint16_t, std::uint8_t>(src, layout, dst);
  by_layout<std::uint16_t, std::uint16_t>(src, layout, dst);
}

}  // namespace sluice::ops
