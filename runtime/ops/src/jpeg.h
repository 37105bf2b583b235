// jpeg.h: libjpeg-turbo behind the decoder.
#pragma once

#include <cstddef>
#include <cstdint>
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

class JpegDecoder {
 public:
  JpegDecoder();
  ~JpegDecoder();
  JpegDecoder(const JpegDecoder&) = delete;
  JpegDecoder& operator=(const JpegDecoder&) = delete;

  JpegHeader header(const std::uint8_t* bytes, std::size_t size, std::string_view name);

  // Decodes at 1/divisor (1, 2, 4, 8) into `out`, as gray, RGB, RGBA or
  // inverted CMYK: the stored layout closest to `channels`.
  Image decode(const std::uint8_t* bytes, std::size_t size, std::string_view name, const JpegHeader& header,
               int divisor, int channels, Buffer& out, StoredLayout& layout);

 private:
  void* handle_;
};

}  // namespace sluice::ops
