// orientation.h: undoing an EXIF orientation.
#pragma once

#include "sluice/ops/image.h"

namespace sluice::ops {

// True for orientations 5..8, which swap width and height.
inline bool orientation_transposes(int orientation) { return orientation >= 5 && orientation <= 8; }

// Writes src as displayed under EXIF `orientation` (2..8) into dst, whose
// size is src's, swapped when orientation_transposes. PIL's exif_transpose.
void apply_orientation(const Image& src, int orientation, const Image& dst);

// The rectangle of a stored stored_width x stored_height image that shows as
// `displayed` under `orientation`: apply_orientation on that rectangle alone
// gives exactly `displayed` of the whole image's result.
Rect stored_rect(const Rect& displayed, int orientation, int stored_width, int stored_height);

}  // namespace sluice::ops
