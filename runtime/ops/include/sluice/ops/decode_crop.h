// sluice/ops/decode_crop.h: the image half of a training pipeline in one call.
//
//   sluice::ops::ImageDecoder decoder;    // one of each per worker
//   sluice::ops::Resampler resampler;
//   Rect r = random_resized_crop(info.width, info.height, uniform);
//   decode_crop(decoder, resampler, bytes, size, path, Box{...r...}, out, {.normalize = {...}});
//
// decode_crop decodes only the pixels of `box` (DecodeOptions::region), at
// the smallest DCT scale that keeps the box at least height x width, and
// resizes, flips and normalizes them into dst in one pass over the output
// rows (Resampler::resize_normalize). The values are bit for bit those of
// the three steps it replaces:
//
//   DecodedImage d = decoder.decode(bytes, size, name, {..., .scale = s});  // s = max(h / box h, w / box w)
//   resampler.resize(d.image, box / d.scale_divisor, tmp);                  // tmp: height x width
//   normalize(tmp, dst, options.normalize);
//
// Errors: as decode() (naming the file), a box not inside the image (also
// naming it) and the ops' own (bad options). dst is untouched on error.
//
// Memory: the decoder's and the resampler's scratch, reused; nothing else.
// Thread safety: as the decoder and resampler given: one per thread.
#pragma once

#include "sluice/export.h"

#include <cstddef>
#include <string_view>

#include "sluice/ops/decode.h"
#include "sluice/ops/geometry.h"
#include "sluice/ops/normalize.h"

namespace sluice::ops {

struct SLUICE_API DecodeCropOptions {
  int height = 224, width = 224;        // of the output
  Filter filter = Filter::bilinear;
  // channels, dtype, apply_exif_orientation, strict, max_pixels; decode_crop
  // sets scale and region from the box.
  DecodeOptions decode{};
  NormalizeOptions normalize{};         // dtype, layout, mean, std, scale, flip of dst
};

// `box`: full-size pixels of the image as displayed (after EXIF orientation
// when decode.apply_exif_orientation), x0 < x1, y0 < y1, inside the image.
SLUICE_API void decode_crop(ImageDecoder& decoder, Resampler& resampler, const void* bytes, std::size_t size,
                            std::string_view name, const Box& box, void* dst, const DecodeCropOptions& options);

}  // namespace sluice::ops
