// normalize_rows.h: normalize() one source row at a time, for passes that
// produce an image row by row (Resampler::resize_normalize) and write each
// row into the tensor while it is still in cache.
#pragma once

#include <cstdint>

#include "sluice/ops/image.h"
#include "sluice/ops/normalize.h"

namespace sluice::ops {

class NormalizeRows {
 public:
  // Rows of a `shape`-sized image (its height, width, channels and dtype;
  // data unused) into dst, as normalize(image, dst, options) writes them.
  // Throws sluice::Error as normalize() does.
  NormalizeRows(const Image& shape, void* dst, const NormalizeOptions& options);

  // Writes source row y: width * channels elements of the shape's dtype.
  void write(const void* row, int y) const { write_(*this, row, y); }

 private:
  template <typename Out, typename In>
  static void write_row(const NormalizeRows& self, const void* row, int y);
  template <typename Out>
  const Out* table(int k) const;

  int height_, width_, channels_;
  Layout layout_;
  bool flip_;
  void* dst_;
  float a_[4], b_[4];  // out = in * a + b
  // uint8 input: the output for each value, per channel, in the output dtype.
  float f32_[4][256];
  std::uint16_t f16_[4][256];
  std::uint8_t u8_[4][256];
  void (*write_)(const NormalizeRows&, const void*, int);
};

}  // namespace sluice::ops
