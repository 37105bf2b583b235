#include "png.h"

#include <spng.h>

#include <algorithm>
#include <memory>
#include <string>

#include "exif.h"
#include "fail.h"

namespace sluice::ops {
namespace {

constexpr std::size_t kChunkLimit = std::size_t{16} << 20;  // one ancillary chunk
constexpr std::size_t kCacheLimit = std::size_t{64} << 20;  // all stored ancillary chunks

struct ContextDeleter {
  void operator()(spng_ctx* ctx) const { spng_ctx_free(ctx); }
};
using Context = std::unique_ptr<spng_ctx, ContextDeleter>;

[[noreturn]] void fail_png(std::string_view name, const char* what, int code) {
  fail_file(name, std::string(what) + ": " + spng_strerror(code));
}

Context open(const std::uint8_t* bytes, std::size_t size, std::string_view name, spng_ihdr& ihdr,
             std::uint64_t max_pixels) {
  Context ctx(spng_ctx_new(0));
  if (!ctx) fail_file(name, "cannot start libspng (out of memory)");
  const auto side = static_cast<std::uint32_t>(std::min<std::uint64_t>(max_pixels, 0x7fffffffu));
  spng_set_image_limits(ctx.get(), side, side);
  spng_set_chunk_limits(ctx.get(), kChunkLimit, kCacheLimit);
  if (int e = spng_set_png_buffer(ctx.get(), bytes, size); e != 0) fail_png(name, "not a readable PNG", e);
  if (int e = spng_get_ihdr(ctx.get(), &ihdr); e != 0) fail_png(name, "not a readable PNG", e);
  check_pixel_limit(name, ihdr.width, ihdr.height, max_pixels);
  return ctx;
}

int stored_channels(const spng_ihdr& ihdr) {
  switch (ihdr.color_type) {
    case SPNG_COLOR_TYPE_GRAYSCALE: return 1;
    case SPNG_COLOR_TYPE_GRAYSCALE_ALPHA: return 2;
    case SPNG_COLOR_TYPE_TRUECOLOR_ALPHA: return 4;
    default: return 3;  // truecolor, indexed
  }
}

}  // namespace

ImageInfo png_info(const std::uint8_t* bytes, std::size_t size, std::string_view name, bool read_orientation) {
  spng_ihdr ihdr{};
  Context ctx = open(bytes, size, name, ihdr, ~std::uint64_t{0});
  ImageInfo info;
  info.format = ImageFormat::png;
  info.width = static_cast<int>(ihdr.width);
  info.height = static_cast<int>(ihdr.height);
  info.channels = stored_channels(ihdr);
  info.bit_depth = ihdr.bit_depth == 16 ? 16 : 8;
  if (read_orientation) info.orientation = png_exif_orientation(bytes, size);
  return info;
}

Image png_decode(const std::uint8_t* bytes, std::size_t size, std::string_view name, const DecodeOptions& options,
                 Buffer& out, StoredLayout& layout, int& orientation) {
  spng_ihdr ihdr{};
  Context ctx = open(bytes, size, name, ihdr, options.max_pixels);
  int format = SPNG_FMT_RGB8, channels = 3;
  DType dtype = DType::u8;
  layout = StoredLayout::rgb;
  if (options.dtype == DType::u16 && ihdr.bit_depth == 16) {
    format = SPNG_FMT_RGBA16, channels = 4, dtype = DType::u16, layout = StoredLayout::rgba;
  } else if (options.channels == 4) {
    format = SPNG_FMT_RGBA8, channels = 4, layout = StoredLayout::rgba;
  } else if (ihdr.color_type == SPNG_COLOR_TYPE_GRAYSCALE && ihdr.bit_depth <= 8) {
    format = SPNG_FMT_G8, channels = 1, layout = StoredLayout::gray;
  }
  std::size_t bytes_out = 0;
  if (int e = spng_decoded_image_size(ctx.get(), format, &bytes_out); e != 0) fail_png(name, "corrupt PNG", e);
  Image image = packed_image(nullptr, static_cast<int>(ihdr.height), static_cast<int>(ihdr.width), channels, dtype);
  if (bytes_out != image.stride * static_cast<std::size_t>(image.height)) {
    fail_file(name, "libspng reports an unexpected decoded size");
  }
  image.data = out.reserve(bytes_out, name);
  if (int e = spng_decode_image(ctx.get(), image.data, bytes_out, format, SPNG_DECODE_TRNS); e != 0) {
    fail_png(name, "corrupt or truncated PNG", e);
  }
  orientation = options.apply_exif_orientation ? png_exif_orientation(bytes, size) : 1;
  return image;
}

}  // namespace sluice::ops
