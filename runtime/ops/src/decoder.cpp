// ImageDecoder: format sniffing, then libjpeg or libspng, then channel
// conversion and orientation, each into the decoder's reused buffers.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include "buffer.h"
#include "color.h"
#include "exif.h"
#include "fail.h"
#include "jpeg.h"
#include "orientation.h"
#include "png.h"
#include "sluice/ops/decode.h"
#include "sluice/ops/geometry.h"

namespace sluice::ops {
namespace {

const std::uint8_t kPngSignature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};

ImageFormat sniff(const std::uint8_t* p, std::size_t size, std::string_view name) {
  if (size == 0) fail_file(name, "the file is empty");
  if (const std::optional<ImageFormat> format = image_format(p, size)) return *format;
  std::string start;  // the first bytes it has, at most 4
  for (std::size_t i = 0; i < std::min<std::size_t>(size, 4); ++i) {
    char byte[4];
    std::snprintf(byte, sizeof byte, i ? " %02x" : "%02x", p[i]);
    start += byte;
  }
  fail_file(name, "not a JPEG or PNG file (" + std::to_string(size) + " bytes, starting with " + start + ")");
}

bool matches(StoredLayout layout, int channels) {
  return (layout == StoredLayout::gray && channels == 1) || (layout == StoredLayout::rgb && channels == 3) ||
         (layout == StoredLayout::rgba && channels == 4);
}

void check_options(const DecodeOptions& o) {
  if (o.channels != 1 && o.channels != 3 && o.channels != 4) {
    fail_op("decode", "channels must be 1, 3 or 4, not " + std::to_string(o.channels));
  }
  if (o.dtype != DType::u8 && o.dtype != DType::u16) {
    fail_op("decode", "decodes to uint8 or uint16, not " + std::string(dtype_name(o.dtype)));
  }
  if (!(o.scale > 0)) fail_op("decode", "scale must be positive");
}

// Throws unless `region` lies inside a width x height image.
void check_region(std::string_view name, const Rect& r, int width, int height) {
  if (r.x < 0 || r.y < 0 || r.width <= 0 || r.height <= 0 || r.x > width - r.width || r.y > height - r.height) {
    fail_file(name, "the region " + std::to_string(r.width) + "x" + std::to_string(r.height) + " at (" +
                        std::to_string(r.x) + ", " + std::to_string(r.y) + ") is not inside the " +
                        std::to_string(width) + "x" + std::to_string(height) + " image");
  }
}

int divide_up(int v, int d) { return (v + d - 1) / d; }

// The pixels of a decode at 1/divisor that cover full-size `r`.
Rect covering(const Rect& r, int divisor) {
  const int x0 = r.x / divisor, y0 = r.y / divisor;
  return {x0, y0, divide_up(r.x + r.width, divisor) - x0, divide_up(r.y + r.height, divisor) - y0};
}

}  // namespace

struct ImageDecoder::Impl {
  Buffer decoded, converted, oriented;
};

ImageDecoder::ImageDecoder() : impl_(std::make_unique<Impl>()) {}
ImageDecoder::~ImageDecoder() = default;

std::optional<ImageFormat> image_format(const void* bytes, std::size_t size) {
  const auto* p = static_cast<const std::uint8_t*>(bytes);
  if (size >= 3 && p[0] == 0xFF && p[1] == 0xD8 && p[2] == 0xFF) return ImageFormat::jpeg;
  if (size >= 8 && std::memcmp(p, kPngSignature, 8) == 0) return ImageFormat::png;
  return std::nullopt;
}

int jpeg_scale_divisor(double scale) {
  for (int divisor : {8, 4, 2}) {
    if (1.0 / divisor >= scale) return divisor;
  }
  return 1;
}

ImageInfo ImageDecoder::info(const void* bytes, std::size_t size, std::string_view name,
                             bool apply_exif_orientation) {
  return info(bytes, size, name, DecodeOptions{.apply_exif_orientation = apply_exif_orientation});
}

ImageInfo ImageDecoder::info(const void* bytes, std::size_t size, std::string_view name,
                             const DecodeOptions& options) {
  const auto* p = static_cast<const std::uint8_t*>(bytes);
  ImageInfo info;
  if (sniff(p, size, name) == ImageFormat::jpeg) {
    const JpegHeader h = jpeg_header(p, size, name, options.strict);
    info.width = h.width, info.height = h.height, info.channels = h.channels;
    if (options.apply_exif_orientation) info.orientation = jpeg_exif_orientation(p, size);
  } else {
    info = png_info(p, size, name, options.apply_exif_orientation);
  }
  if (orientation_transposes(info.orientation)) std::swap(info.width, info.height);
  return info;
}

DecodedImage ImageDecoder::decode(const void* bytes, std::size_t size, std::string_view name,
                                  const DecodeOptions& options) {
  check_options(options);
  const auto* p = static_cast<const std::uint8_t*>(bytes);
  DecodedImage result;
  StoredLayout layout;
  Image image;
  if (sniff(p, size, name) == ImageFormat::jpeg) {
    result.scale_divisor = jpeg_scale_divisor(options.scale);
    const int d = result.scale_divisor;
    JpegDecode jpeg{.divisor = d, .channels = options.channels, .strict = options.strict,
                    .max_pixels = options.max_pixels};
    if (options.apply_exif_orientation) result.info.orientation = jpeg_exif_orientation(p, size);
    if (options.region) {
      // The region as stored, at 1/d: the header first, for the sizes.
      const JpegHeader h = jpeg_header(p, size, name, options.strict);
      const int orientation = result.info.orientation;
      const bool transposes = orientation_transposes(orientation);
      check_region(name, *options.region, transposes ? h.height : h.width, transposes ? h.width : h.height);
      result.region = covering(*options.region, d);
      jpeg.region = stored_rect(result.region, orientation, divide_up(h.width, d), divide_up(h.height, d));
    }
    JpegHeader h;
    image = jpeg_decode(p, size, name, jpeg, impl_->decoded, layout, h);
    result.info.width = h.width, result.info.height = h.height, result.info.channels = h.channels;
  } else {
    result.info = png_info(p, size, name, false);
    image = png_decode(p, size, name, options, impl_->decoded, layout, result.info.orientation);
  }
  if (!matches(layout, options.channels) || image.dtype != options.dtype) {
    Image converted = packed_image(nullptr, image.height, image.width, options.channels, options.dtype);
    converted.data = impl_->converted.reserve(converted.stride * static_cast<std::size_t>(converted.height), name);
    convert_pixels(image, layout, converted);
    image = converted;
  }
  const int orientation = result.info.orientation;
  if (orientation != 1) {
    const bool transposes = orientation_transposes(orientation);
    Image oriented = packed_image(nullptr, transposes ? image.width : image.height,
                                  transposes ? image.height : image.width, image.channels, image.dtype);
    oriented.data = impl_->oriented.reserve(oriented.stride * static_cast<std::size_t>(oriented.height), name);
    apply_orientation(image, orientation, oriented);
    image = oriented;
    if (transposes) std::swap(result.info.width, result.info.height);
  }
  if (options.region && result.info.format == ImageFormat::png) {
    check_region(name, *options.region, image.width, image.height);
    result.region = *options.region;
    image = crop(image, result.region);
  } else if (!options.region) {
    result.region = Rect{0, 0, image.width, image.height};
  }
  result.image = image;
  return result;
}

}  // namespace sluice::ops
