// exif.h: the EXIF orientation tag, read with bounds checks on hostile input.
#pragma once

#include <cstddef>
#include <cstdint>

namespace sluice::ops {

// Orientation (1..8) in a TIFF-structured EXIF block ("II*\0" or "MM\0*"
// first), or 1 when it is absent or malformed. The tag may be stored as any
// integer type (BYTE, SHORT, LONG and their signed forms), as PIL reads it.
int exif_orientation(const std::uint8_t* tiff, std::size_t size);

// The same, from the APP1 "Exif" segment of a JPEG (markers before the first scan).
int jpeg_exif_orientation(const std::uint8_t* jpeg, std::size_t size);

// The same, from the first eXIf chunk of a PNG, before or after the image
// data (PIL reads both).
int png_exif_orientation(const std::uint8_t* png, std::size_t size);

}  // namespace sluice::ops
