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

Rect stored_rect(const Rect& d, int orientation, int stored_width, int stored_height) {
  // Displayed columns [x0, x1) and rows [y0, y1); the stored ones they come from.
  const int x0 = d.x, x1 = d.x + d.width, y0 = d.y, y1 = d.y + d.height;
  const int ws = stored_width, hs = stored_height;
  switch (orientation) {
    case 2: return {ws - x1, y0, d.width, d.height};
    case 3: return {ws - x1, hs - y1, d.width, d.height};
    case 4: return {x0, hs - y1, d.width, d.height};
    case 5: return {y0, x0, d.height, d.width};
    case 6: return {y0, hs - x1, d.height, d.width};
    case 7: return {ws - y1, hs - x1, d.height, d.width};
    case 8: return {ws - y1, x0, d.height, d.width};
    default: return d;
  }
}

}  // namespace sluice::ops
