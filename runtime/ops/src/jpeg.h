// jpeg.h: libjpeg (libjpeg-turbo's jpeglib.h API) behind the decoder.
//
// Every call runs a fresh libjpeg decompressor that is destroyed before the
// call returns, on success and on every error: nothing (Huffman or
// quantization tables, error state) carries over from one file to the next.
//
// Errors and warnings. libjpeg's fatal errors always throw. Its recoverable
// warnings follow what PIL delivers (PIL ignores libjpeg warnings but refuses
// data that ends early unless LOAD_TRUNCATED_IMAGES is set):
//  - JWRN_JPEG_EOF ("Premature end of JPEG file"): the data ends before the
//    end-of-image marker. An error ("image file is truncated" in PIL), even
//    when only the marker is missing;
//  - any other warning (extraneous bytes before a marker, a corrupt scan
//    libjpeg recovers from, an unknown marker...): the image decodes as
//    libjpeg recovers it, the pixels PIL returns;
//  - with `strict`, any warning is an error.
// Every error message starts with the file's name.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "buffer.h"
#include "color.h"
#include "sluice/ops/image.h"

namespace sluice::ops {

struct JpegHeader {
  int width = 0;
  int height = 0;
  int channels = 0;  // 1 gray, 3 YCbCr/RGB, 4 CMYK/YCCK
};

// Reads the markers up to the first scan. Throws Error naming the file.
JpegHeader jpeg_header(const std::uint8_t* bytes, std::size_t size, std::string_view name, bool strict);

struct JpegDecode {
  int divisor = 1;    // DCT downscale: 1, 2, 4 or 8
  int channels = 3;   // wanted: 1, 3 or 4
  bool strict = false;
  std::uint64_t max_pixels = ~std::uint64_t{0};  // checked on the header, before allocating
  // Only this rectangle of the output (at 1/divisor, as stored), inside it.
  std::optional<Rect> region = std::nullopt;
};

// Decodes at 1/divisor (sizes rounded up) into `out`, as gray, RGB, RGBA or
// inverted CMYK: the stored layout closest to `channels`. `header` is set
// from the file. Throws Error naming the file; on error nothing is returned.
//
// With a region, the result is exactly that rectangle of the whole decode:
// libjpeg skips the rows above it (jpeg_skip_scanlines) and transforms only
// the iMCU columns around it (jpeg_crop_scanline). Both keep one iMCU of
// margin on every side, cut away before returning, because fancy upsampling
// treats the edge of what it decodes as the image's edge.
//
// What is left unread (never under `strict`; see jpeg_markers.h): in a
// single-scan JPEG, the rows below a region once the rest of the file is seen
// to be plain entropy-coded data up to its end marker (otherwise they are
// skipped with jpeg_skip_scanlines and the last one decoded, so that damage
// there fails as in a whole decode); in a progressive JPEG, the AC scans of
// the components that a DCT scale of 1/8 reduces to their DC coefficient.
// Either way the pixels, and the errors, are those of reading every byte.
Image jpeg_decode(const std::uint8_t* bytes, std::size_t size, std::string_view name, const JpegDecode& options,
                  Buffer& out, StoredLayout& layout, JpegHeader& header);

}  // namespace sluice::ops
