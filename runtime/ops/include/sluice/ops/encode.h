// sluice/ops/encode.h: writing images for people to look at (PNG, through libspng).
//
//   sluice::ops::write_png("sheet.png", sluice::ops::packed_image(pixels, 64, 96, 3));
//
// Errors: a view that is not uint8 with 1 (gray), 3 (RGB) or 4 (RGBA)
// channels, or a file that cannot be written, throws sluice::Error naming the
// path. A failed write may leave a partial file behind.
//
// Thread safety: independent calls may run concurrently.
#pragma once

#include "sluice/export.h"

#include <string>

#include "sluice/ops/image.h"

namespace sluice::ops {

// Writes `image` to `path` as an 8-bit PNG (gray, RGB or RGBA as its channels say).
SLUICE_API void write_png(const std::string& path, const Image& image);

}  // namespace sluice::ops
