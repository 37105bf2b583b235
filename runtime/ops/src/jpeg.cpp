#include "jpeg.h"

#include <turbojpeg.h>

#include <cstring>
#include <string>

#include "fail.h"

namespace sluice::ops {
namespace {

// libjpeg's warning for data that ends before the image does (JWRN_JPEG_EOF)
// and for a scan cut short (JWRN_HIT_MARKER's "premature end of data segment").
bool is_truncation(const char* message) {
  return std::strstr(message, "Premature end") != nullptr || std::strstr(message, "premature end") != nullptr;
}

}  // namespace

JpegDecoder::JpegDecoder() : handle_(tjInitDecompress()) {
  if (handle_ == nullptr) throw Error(std::string("sluice ops: cannot start libjpeg-turbo: ") + tjGetErrorStr2(nullptr));
}

JpegDecoder::~JpegDecoder() { tjDestroy(handle_); }

JpegHeader JpegDecoder::header(const std::uint8_t* bytes, std::size_t size, std::string_view name) {
  int width = 0, height = 0, subsampling = 0, colorspace = 0;
  // A warning (extraneous bytes before a marker, say) still leaves a usable header.
  if (tjDecompressHeader3(handle_, bytes, static_cast<unsigned long>(size), &width, &height, &subsampling,
                          &colorspace) != 0 &&
      (tjGetErrorCode(handle_) != TJERR_WARNING || width <= 0 || height <= 0)) {
    fail_file(name, std::string("not a readable JPEG: ") + tjGetErrorStr2(handle_));
  }
  JpegHeader h{width, height, 3};
  if (colorspace == TJCS_GRAY) h.channels = 1;
  if (colorspace == TJCS_CMYK || colorspace == TJCS_YCCK) h.channels = 4;
  return h;
}

Image JpegDecoder::decode(const std::uint8_t* bytes, std::size_t size, std::string_view name,
                          const JpegHeader& header, int divisor, int channels, Buffer& out, StoredLayout& layout) {
  int format = TJPF_RGB, stored = 3;
  layout = StoredLayout::rgb;
  if (header.channels == 4) {
    format = TJPF_CMYK, stored = 4, layout = StoredLayout::cmyk_inverted;
  } else if (header.channels == 1 || channels == 1) {
    format = TJPF_GRAY, stored = 1, layout = StoredLayout::gray;
  } else if (channels == 4) {
    format = TJPF_RGBA, stored = 4, layout = StoredLayout::rgba;
  }
  const int width = (header.width + divisor - 1) / divisor;
  const int height = (header.height + divisor - 1) / divisor;
  Image image = packed_image(nullptr, height, width, stored);
  image.data = out.reserve(image.stride * static_cast<std::size_t>(height));
  if (tjDecompress2(handle_, bytes, static_cast<unsigned long>(size), static_cast<unsigned char*>(image.data),
                    width, static_cast<int>(image.stride), height, format, TJFLAG_LIMITSCANS) != 0) {
    const char* message = tjGetErrorStr2(handle_);
    if (tjGetErrorCode(handle_) != TJERR_WARNING) fail_file(name, std::string("corrupt JPEG: ") + message);
    if (is_truncation(message)) fail_file(name, std::string("truncated JPEG: ") + message);
  }
  return image;
}

}  // namespace sluice::ops
