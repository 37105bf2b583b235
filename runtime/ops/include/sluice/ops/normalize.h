// sluice/ops/normalize.h: the last step into a batch slot.
//
//   out[c] = (x * scale - mean[c]) / std[c]
//
// read from a uint8 or uint16 HWC image and written as float32, float16 or
// uint8 (rounded and clamped), in CHW or HWC order, optionally mirrored left to
// right on the way. With the defaults (scale = 1 / max value, mean 0, std 1) it
// maps to [0, 1] (a uint8 output with no mean or std keeps the values);
// torchvision's ToTensor + Normalize(mean, std) is
// {.mean = {0.485, 0.456, 0.406}, .std = {0.229, 0.224, 0.225}}. cast() is
// the same with scale 1: values kept, dtype and layout changed.
//
// dst is `height * width * channels` elements, densely packed, for example a
// sample's row of a float16[3,224,224] field in a batch slot.
//
// Thread safety: pure functions of their arguments; no allocation.
#pragma once

#include "sluice/export.h"

#include <array>

#include "sluice/ops/image.h"

namespace sluice::ops {

enum class Layout : unsigned char { chw, hwc };

struct SLUICE_API NormalizeOptions {
  DType dtype = DType::f32;              // f32, f16 or u8
  Layout layout = Layout::chw;
  std::array<float, 4> mean = {0, 0, 0, 0};
  std::array<float, 4> std = {1, 1, 1, 1};
  float scale = 0;                       // 0: 1 / 255 for uint8, 1 / 65535 for uint16 (into [0, 1]);
                                         // into uint8 with no mean or std, values kept (1, 1 / 257)
  bool flip = false;                     // mirror left to right
};

// Throws sluice::Error for an unusable image, dtype or std of 0.
SLUICE_API void normalize(const Image& src, void* dst, const NormalizeOptions& options);

// normalize with scale 1, mean 0, std 1.
SLUICE_API void cast(const Image& src, void* dst, DType dtype, Layout layout = Layout::chw);

}  // namespace sluice::ops
