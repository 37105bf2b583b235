// exif.h: the EXIF orientation tag, read with bounds checks on hostile input.
#pragma once

#include <cstddef>
#include <cstdint>

namespace sluice::ops {

// Orientation (1..8) in a TIFF-structured EXIF block ("II*\0" or "MM\0*"
// first), or 1 when it is absent or malformed.
int exif_orientation(const std::uint8_t* tiff, std::size_t size);

// The same, from the APP1 "Exif" segment of a JPEG (markers before the first scan).
int jpeg_exif_orientation(const std::uint8_t* jpeg, std::size_t size);

}  // namespace sluice::ops
