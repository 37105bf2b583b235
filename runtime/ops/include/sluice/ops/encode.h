// sluice/ops/encode.h: writing images: PNG files for people to look at
// (libspng), JPEG bytes for datasets (libjpeg-turbo).
//
//   sluice::ops::write_png("sheet.png", sluice::ops::packed_image(pixels, 64, 96, 3));
//   std::vector<std::byte> jpeg;
//   sluice::ops::encode_jpeg(image, {.quality = 90}, jpeg);
//
// Errors: write_png: a view that is not uint8 with 1 (gray), 3 (RGB) or 4
// (RGBA) channels, or a file that cannot be written, throws sluice::Error
// naming the path (a failed write may leave a partial file behind).
// encode_jpeg: a view that is not uint8 with 1 or 3 channels, or a quality
// outside 1..100, throws sluice::Error; `out` is then unspecified.
//
// encode_jpeg writes what PIL's Image.save(format="JPEG", quality=q) writes
// by default: a baseline JFIF, YCbCr with 4:2:0 chroma subsampling (gray stays
// one channel), the slow integer DCT, standard Huffman tables. A fresh
// libjpeg compressor per call: nothing carries over between images.
//
// Thread safety: independent calls may run concurrently.
#pragma once

#include "sluice/export.h"

#include <cstddef>
#include <string>
#include <vector>

#include "sluice/ops/image.h"

namespace sluice::ops {

// Writes `image` to `path` as an 8-bit PNG (gray, RGB or RGBA as its channels say).
SLUICE_API void write_png(const std::string& path, const Image& image);

struct SLUICE_API JpegEncodeOptions {
  int quality = 90;  // 1..100, as libjpeg's jpeg_set_quality and PIL take it
};

// Replaces `out` with `image` encoded as a JPEG (its capacity is reused, so a
// caller that keeps `out` allocates only when an image is larger than before).
SLUICE_API void encode_jpeg(const Image& image, const JpegEncodeOptions& options, std::vector<std::byte>& out);

}  // namespace sluice::ops
