// color.h: stored pixel layouts to the channels and dtype asked for.
#pragma once

#include "sluice/ops/image.h"

namespace sluice::ops {

// What a decoder wrote, before conversion.
enum class StoredLayout : unsigned char { gray, gray_alpha, rgb, rgba, cmyk_inverted };

// src (channels per `layout`, u8 or u16) into dst (1, 3 or 4 channels, u8 or
// u16), same size. Gray from colour: PIL's luma; alpha dropped or opaque;
// inverted CMYK as PIL's CMYK;I to RGB.
void convert_pixels(const Image& src, StoredLayout layout, const Image& dst);

}  // namespace sluice::ops
