// pad: an image placed inside a larger one, the rest filled.
#include <cstdint>
#include <cstring>
#include <string>

#include "fail.h"
#include "sluice/ops/geometry.h"

namespace sluice::ops {
namespace {

template <typename T>
void fill_rows(const Image& dst, const Image& src, int top, int left, const std::array<int, 4>& fill) {
  const int c = dst.channels;
  for (int y = 0; y < dst.height; ++y) {
    T* out = dst.row<T>(y);
    const bool inside = y >= top && y < top + src.height;
    for (int x = 0; x < dst.width; ++x) {
      if (inside && x == left) {
        std::memcpy(out + static_cast<std::size_t>(x) * c, src.row<T>(y - top), src.row_bytes());
        x += src.width - 1;
        continue;
      }
      for (int k = 0; k < c; ++k) out[static_cast<std::size_t>(x) * c + k] = static_cast<T>(fill[k]);
    }
  }
}

}  // namespace

void pad(const Image& src, const Image& dst, int top, int left, const std::array<int, 4>& fill) {
  check_image(src, "pad");
  check_image(dst, "pad");
  if (src.channels != dst.channels || src.dtype != dst.dtype) {
    fail_op("pad", "source and destination differ in channels or dtype");
  }
  if (top < 0 || left < 0 || top > dst.height - src.height || left > dst.width - src.width) {
    fail_op("pad", "a " + std::to_string(src.width) + "x" + std::to_string(src.height) + " image at (" +
                       std::to_string(left) + ", " + std::to_string(top) + ") does not fit in " +
                       std::to_string(dst.width) + "x" + std::to_string(dst.height));
  }
  const int max = src.dtype == DType::u8 ? 255 : 65535;
  for (int k = 0; k < src.channels; ++k) {
    if (fill[k] < 0 || fill[k] > max) fail_op("pad", "fill value " + std::to_string(fill[k]) + " is out of range");
  }
  if (src.dtype == DType::u8) {
    fill_rows<std::uint8_t>(dst, src, top, left, fill);
  } else {
    fill_rows<std::uint16_t>(dst, src, top, left, fill);
  }
}

}  // namespace sluice::ops
