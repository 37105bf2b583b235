// orientation.h: undoing an EXIF orientation.
#pragma once

#include "sluice/ops/image.h"

namespace sluice::ops {

// True for orientations 5..8, which swap width and height.
inline bool orientation_transposes(int orientation) { return orientation >= 5 && orientation <= 8; }

// Writes src as displayed under EXIF `orientation` (2..8) into dst, whose
// size is src's, swapped when orientation_transposes. PIL's exif_transpose.
void apply_orientation(const Image& src, int orientation, const Image& dst);

}  // namespace sluice::ops
