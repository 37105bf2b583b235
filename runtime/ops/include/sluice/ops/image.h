// sluice/ops/image.h: the image view every op reads and writes.
//
// An Image is a view, never an owner: height rows of width pixels, each pixel
// `channels` interleaved elements of `dtype` (HWC), rows `stride` bytes apart.
// Memory comes from whoever made the view: an ImageDecoder's scratch, a batch
// slot, a caller's buffer.
//
// Geometry ops take uint8 and uint16 images; finishing ops (normalize.h) read
// them and write uint8, float16 or float32.
//
// Thread safety: a view is plain data; ops that write through it must not run
// concurrently on overlapping memory.
#pragma once

#include "sluice/export.h"

#include <cstddef>
#include <cstdint>

#include "sluice/dtype.h"

namespace sluice::ops {

struct SLUICE_API Image {
  void* data = nullptr;
  int height = 0;
  int width = 0;
  int channels = 0;              // 1, 2, 3 or 4
  DType dtype = DType::u8;       // u8 or u16
  std::size_t stride = 0;        // bytes from one row to the next

  std::size_t pixel_bytes() const { return static_cast<std::size_t>(channels) * dtype_size(dtype); }
  std::size_t row_bytes() const { return static_cast<std::size_t>(width) * pixel_bytes(); }
  template <typename T>
  T* row(int y) const {
    return reinterpret_cast<T*>(static_cast<std::byte*>(data) + static_cast<std::size_t>(y) * stride);
  }
};

// A densely packed view (stride = row bytes) over `data`.
SLUICE_API Image packed_image(void* data, int height, int width, int channels, DType dtype = DType::u8);

// A region of an image, in pixels.
struct SLUICE_API Rect {
  int x = 0;
  int y = 0;
  int width = 0;
  int height = 0;
};

// A region in continuous coordinates (pixel x covers [x, x + 1)); resampling
// reads sub-pixel boxes such as a Rect seen in a DCT-downscaled decode.
struct SLUICE_API Box {
  double x0 = 0, y0 = 0, x1 = 0, y1 = 0;
};

// Throws sluice::Error, naming `what`, unless the view is usable by the ops:
// non-null, positive size, 1..4 channels, u8 or u16, stride >= row bytes.
SLUICE_API void check_image(const Image& image, const char* what);

}  // namespace sluice::ops
