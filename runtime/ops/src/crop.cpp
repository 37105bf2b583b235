// crop (a view), copy and horizontal flip.
#include <cstring>
#include <string>

#include "fail.h"
#include "sluice/ops/geometry.h"

namespace sluice::ops {
namespace {

void check_same_shape(const Image& src, const Image& dst, const char* op) {
  check_image(src, op);
  check_image(dst, op);
  if (src.height != dst.height || src.width != dst.width || src.channels != dst.channels ||
      src.dtype != dst.dtype) {
    fail_op(op, "source and destination differ in size, channels or dtype");
  }
}

template <std::size_t Bytes>
void mirror_rows(const Image& src, const Image& dst) {
  const int w = src.width;
  for (int y = 0; y < src.height; ++y) {
    const std::byte* in = src.row<std::byte>(y);
    std::byte* out = dst.row<std::byte>(y);
    if (in == out) {
      for (int x = 0, z = w - 1; x < z; ++x, --z) {
        std::byte t[Bytes];
        std::memcpy(t, out + x * Bytes, Bytes);
        std::memcpy(out + x * Bytes, out + z * Bytes, Bytes);
        std::memcpy(out + z * Bytes, t, Bytes);
      }
    } else {
      for (int x = 0; x < w; ++x) std::memcpy(out + x * Bytes, in + (w - 1 - x) * Bytes, Bytes);
    }
  }
}

}  // namespace

Image crop(const Image& image, const Rect& rect) {
  check_image(image, "crop");
  if (rect.x < 0 || rect.y < 0 || rect.width <= 0 || rect.height <= 0 ||
      rect.x > image.width - rect.width || rect.y > image.height - rect.height) {
    fail_op("crop", std::to_string(rect.width) + "x" + std::to_string(rect.height) + " at (" +
                        std::to_string(rect.x) + ", " + std::to_string(rect.y) + ") is not inside a " +
                        std::to_string(image.width) + "x" + std::to_string(image.height) + " image");
  }
  Image view = image;
  view.data = image.row<std::byte>(rect.y) + static_cast<std::size_t>(rect.x) * image.pixel_bytes();
  view.width = rect.width;
  view.height = rect.height;
  return view;
}

void copy(const Image& src, const Image& dst) {
  check_same_shape(src, dst, "copy");
  for (int y = 0; y < src.height; ++y) std::memmove(dst.row<std::byte>(y), src.row<std::byte>(y), src.row_bytes());
}

void flip_horizontal(const Image& src, const Image& dst) {
  check_same_shape(src, dst, "flip");
  switch (src.pixel_bytes()) {
    case 1: return mirror_rows<1>(src, dst);
    case 2: return mirror_rows<2>(src, dst);
    case 3: return mirror_rows<3>(src, dst);
    case 4: return mirror_rows<4>(src, dst);
    case 6: return mirror_rows<6>(src, dst);
    default: return mirror_rows<8>(src, dst);
  }
}

}  // namespace sluice::ops
