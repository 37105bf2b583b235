// sluice/cuda/normalize.h: finishing a uint8 field on the device after its copy.
//
// A uint8 field crosses PCIe as uint8 (4x fewer bytes than float32) and is then
// turned into float32 or float16 by one kernel on the copy stream:
//
//   out = (in - mean[c]) / stddev[c]
//
// where c is the channel, the last dimension of the per-sample shape. With
// hwc_to_chw, a per-sample [H, W, C] field comes out as [C, H, W].
//
//   sluice::cuda::Normalize n;
//   n.field = "image";
//   n.to = sluice::DType::f16;
//   n.mean = {123.7f, 116.3f, 103.5f};
//   n.stddev = {58.4f, 57.1f, 57.4f};
//   n.hwc_to_chw = true;
#pragma once

#include <string>
#include <vector>

#include "sluice/dtype.h"

namespace sluice::cuda {

struct Normalize {
  std::string field;                // a uint8 field of the Loader's Options
  DType to = DType::f32;            // f32 or f16
  std::vector<float> mean = {0.0f};    // one value for every channel, or one per channel
  std::vector<float> stddev = {1.0f};  // likewise; in the units of the input (0..255)
  bool hwc_to_chw = false;          // needs a per-sample shape of exactly [H, W, C]
};

}  // namespace sluice::cuda
