#include "orientation.h"

#include <cstddef>
#include <cstring>

namespace sluice::ops {

void apply_orientation(const Image& src, int orientation, const Image& dst) {
  // dst(x, y) = src(origin + x * step_x + y * step_y), in bytes.
  const std::ptrdiff_t px = static_cast<std::ptrdiff_t>(src.pixel_bytes());
  const std::ptrdiff_t row = static_cast<std::ptrdiff_t>(src.stride);
  const std::ptrdiff_t right = (src.width - 1) * px, bottom = (src.height - 1) * row;
  std::ptrdiff_t origin = 0, step_x = px, step_y = row;
  switch (orientation) {
    case 2: origin = right, step_x = -px, step_y = row; break;              // mirror
    case 3: origin = right + bottom, step_x = -px, step_y = -row; break;    // rotate 180
    case 4: origin = bottom, step_x = px, step_y = -row; break;             // flip
    case 5: origin = 0, step_x = row, step_y = px; break;                   // transpose
    case 6: origin = bottom, step_x = -row, step_y = px; break;             // rotate 90 clockwise
    case 7: origin = right + bottom, step_x = -row, step_y = -px; break;    // transverse
    case 8: origin = right, step_x = row, step_y = -px; break;              // rotate 90 counter-clockwise
    default: break;
  }
  const std::byte* base = static_cast<const std::byte*>(src.data) + origin;
  for (int y = 0; y < dst.height; ++y) {
    std::byte* out = dst.row<std::byte>(y);
    const std::byte* in = base + y * step_y;
    for (int x = 0; x < dst.width; ++x, in += step_x) std::memcpy(out + x * px, in, px);
  }
}

}  // namespace sluice::ops
