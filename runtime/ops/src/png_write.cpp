// write_png: libspng's encoder, row by row from any stride.
#include <spng.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "fail.h"
#include "sluice/ops/encode.h"

namespace sluice::ops {
namespace {

struct ContextDeleter {
  void operator()(spng_ctx* ctx) const { spng_ctx_free(ctx); }
};
struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};

std::uint8_t color_type(int channels) {
  switch (channels) {
    case 1: return SPNG_COLOR_TYPE_GRAYSCALE;
    case 3: return SPNG_COLOR_TYPE_TRUECOLOR;
    case 4: return SPNG_COLOR_TYPE_TRUECOLOR_ALPHA;
  }
  return 0;
}

}  // namespace

void write_png(const std::string& path, const Image& image) {
  check_image(image, "write_png");
  if (image.dtype != DType::u8 || image.channels == 2) {
    fail_file(path, "write_png takes uint8 images of 1, 3 or 4 channels");
  }
  std::unique_ptr<std::FILE, FileCloser> file(std::fopen(path.c_str(), "wb"));
  if (!file) fail_file(path, std::string("cannot write: ") + std::strerror(errno));
  std::unique_ptr<spng_ctx, ContextDeleter> ctx(spng_ctx_new(SPNG_CTX_ENCODER));
  if (!ctx) fail_file(path, "cannot start libspng (out of memory)");
  spng_ihdr ihdr{};
  ihdr.width = static_cast<std::uint32_t>(image.width);
  ihdr.height = static_cast<std::uint32_t>(image.height);
  ihdr.bit_depth = 8;
  ihdr.color_type = color_type(image.channels);
  int e = spng_set_png_file(ctx.get(), file.get());
  if (e == 0) e = spng_set_ihdr(ctx.get(), &ihdr);
  // Progressive encoding takes one row at a time, so any stride will do.
  if (e == 0) e = spng_encode_image(ctx.get(), nullptr, 0, SPNG_FMT_PNG, SPNG_ENCODE_PROGRESSIVE | SPNG_ENCODE_FINALIZE);
  for (int y = 0; e == 0 && y < image.height; ++y) {
    e = spng_encode_row(ctx.get(), image.row<std::uint8_t>(y), image.row_bytes());
    if (e == SPNG_EOI) e = 0;  // the last row ends the image
  }
  if (e != 0) fail_file(path, std::string("cannot encode PNG: ") + spng_strerror(e));
  ctx.reset();  // finalized: everything went to the file
  if (std::fflush(file.get()) != 0 || std::ferror(file.get())) {
    fail_file(path, std::string("cannot write: ") + std::strerror(errno));
  }
}

}  // namespace sluice::ops
