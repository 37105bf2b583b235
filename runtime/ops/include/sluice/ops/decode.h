// sluice/ops/decode.h: JPEG (libjpeg-turbo's libjpeg API) and PNG (libspng) decoding.
//
//   sluice::ops::ImageDecoder decoder;                  // one per worker
//   ImageInfo info = decoder.info(bytes, size, path);   // header only
//   DecodedImage d = decoder.decode(bytes, size, path, {.channels = 3, .scale = 0.3});
//   // d.image: 3-channel uint8, 1/2 size (the DCT downscale that keeps >= 0.3)
//   DecodedImage r = decoder.decode(bytes, size, path, {.scale = 0.3, .region = Rect{10, 20, 300, 200}});
//   // r.image: the 1/2-size pixels that cover that full-size rectangle, at r.region
//
// Any stored layout (grayscale, gray + alpha, RGB, RGBA, palette, CMYK/YCCK
// JPEG, 16-bit PNG, interlaced/progressive) comes out as `channels` (1 gray,
// 3 RGB, 4 RGBA) elements of `dtype` (u8, or u16 where 8-bit values v become
// v * 257). Gray from colour is ITU-R 601 luma (L = (299 R + 587 G + 114 B) /
// 1000), the formula PIL uses; alpha is dropped or set opaque; CMYK is
// taken as Adobe-inverted, R = C' K' / 255, as PIL does.
//
// Errors: a file that is not a JPEG or PNG, truncated, corrupt, or whose
// header claims more than `max_pixels` pixels throws sluice::Error whose
// message starts with the name given for the file (an allocation failure
// too). The pixel limit is checked on the header, before any pixel memory is
// allocated. A failed decode returns nothing, and leaves nothing behind: each
// file gets fresh libjpeg / libspng state, so the next file decodes exactly as
// it would in a new decoder.
//
// JPEG warnings, as PIL delivers: libjpeg's fatal errors are errors whatever
// warnings came before. Data that ends before the end-of-image marker
// ("Premature end of JPEG file") is an error, as in PIL without
// LOAD_TRUNCATED_IMAGES. Other warnings (extraneous bytes before a marker, a
// corrupt scan libjpeg recovers from) decode to the pixels libjpeg recovers,
// which are PIL's. With DecodeOptions::strict, any warning is an error.
//
// Memory: the decoded image lives in the decoder's own scratch and stays valid
// until its next decode(). Scratch grows to the largest image decoded and is
// then reused; libjpeg and libspng allocate their own small per-file state.
//
// Thread safety: an ImageDecoder is not thread-safe; give each thread or worker
// its own. Decoders in different threads are independent.
#pragma once

#include "sluice/export.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>

#include "sluice/ops/image.h"

namespace sluice::ops {

enum class ImageFormat : std::uint8_t { jpeg, png };

// What the header says, before decoding.
struct SLUICE_API ImageInfo {
  ImageFormat format = ImageFormat::jpeg;
  int width = 0;            // as displayed: swapped for EXIF orientations 5-8
  int height = 0;           // when DecodeOptions::apply_exif_orientation is set
  int channels = 0;         // as stored: 1 gray, 2 gray + alpha, 3 RGB/YCbCr, 4 RGBA/CMYK
  int bit_depth = 8;        // 8 or 16 (PNG 1/2/4-bit report 8)
  int orientation = 1;      // EXIF orientation 1..8 (1 when absent)
};

// 128 Mi pixels: 384 MiB of RGB at 8 bits.
inline constexpr std::uint64_t kDefaultMaxPixels = std::uint64_t{1} << 27;

struct SLUICE_API DecodeOptions {
  int channels = 3;                       // 1, 3 or 4
  DType dtype = DType::u8;                // u8 or u16
  // Downscale a JPEG in the DCT by the smallest of 1/8, 1/4, 1/2 that still
  // keeps `scale` of the full size (1: full size). A caller that will shrink a
  // region by a factor s passes s: 0.3 decodes at 1/2, 0.1 at 1/8.
  // PNG ignores it. The decoded Image's size says what was chosen.
  double scale = 1.0;
  bool apply_exif_orientation = false;    // rotate/flip as the EXIF tag says
  std::uint64_t max_pixels = kDefaultMaxPixels;
  bool strict = false;                    // any JPEG warning is an error (see above)
  // Decode only the pixels that cover this rectangle of the full-size image
  // as displayed (after EXIF orientation when applied); it must lie inside.
  // The result is exactly the matching rectangle of a whole decode
  // (DecodedImage::region). A JPEG decodes only the rows and the block
  // columns around it, with libjpeg's jpeg_skip_scanlines and
  // jpeg_crop_scanline; a PNG decodes whole and is cropped.
  std::optional<Rect> region = std::nullopt;
};

struct SLUICE_API DecodedImage {
  Image image;            // in the decoder's scratch
  ImageInfo info;         // the header (width, height as displayed at full size)
  // The DCT downscale applied: image is info's size divided by this, rounded up.
  // A region (x0, y0, x1, y1) of the full-size image is (x0 / d, ...) in image.
  int scale_divisor = 1;
  // Where image lies in the whole decode (at 1/scale_divisor, as displayed):
  // all of it, or the smallest rectangle covering DecodeOptions::region
  // divided by scale_divisor (x0 / d rounded down, x1 / d rounded up).
  Rect region{};
};

class SLUICE_API ImageDecoder {
 public:
  ImageDecoder();
  ~ImageDecoder();
  ImageDecoder(const ImageDecoder&) = delete;
  ImageDecoder& operator=(const ImageDecoder&) = delete;

  // Reads the header. `name` names the file in errors. Throws Error.
  ImageInfo info(const void* bytes, std::size_t size, std::string_view name,
                 bool apply_exif_orientation = false);
  // The same, as decode() with `options` would report it (apply_exif_orientation
  // and strict apply; a JPEG warning in the header is an error under strict).
  ImageInfo info(const void* bytes, std::size_t size, std::string_view name, const DecodeOptions& options);

  // Decodes into the decoder's scratch (valid until the next decode). Throws Error.
  DecodedImage decode(const void* bytes, std::size_t size, std::string_view name,
                      const DecodeOptions& options = {});

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// JPEG or PNG, as the first bytes say (what decode() accepts); nullopt for
// anything else. Reads at most 8 bytes.
SLUICE_API std::optional<ImageFormat> image_format(const void* bytes, std::size_t size);

// The DCT downscale decode() picks for `scale`: 1, 2, 4 or 8 (the divisor).
SLUICE_API int jpeg_scale_divisor(double scale);

}  // namespace sluice::ops
