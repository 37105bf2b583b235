// png.h: libspng behind the decoder.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "buffer.h"
#include "color.h"
#include "sluice/ops/decode.h"

namespace sluice::ops {

// Header and (when asked) EXIF orientation. Throws Error naming the file.
ImageInfo png_info(const std::uint8_t* bytes, std::size_t size, std::string_view name, bool read_orientation);

// Decodes into `out` as gray, RGB, RGBA (8-bit) or RGBA (16-bit, when the file
// is 16-bit and u16 is wanted); `orientation` is set when asked for.
Image png_decode(const std::uint8_t* bytes, std::size_t size, std::string_view name, const DecodeOptions& options,
                 Buffer& out, StoredLayout& layout, int& orientation);

}  // namespace sluice::ops
