// image_api.h: the image ops (sluice::ops) as flat C functions for the LuaJIT FFI.
//
// Like ffi_api.h: one table of function pointers, declared again for the FFI
// as `sluice_image_api` in lua/sluice_image.lua (which checks sizeof), called
// as cdata. Every function is noexcept: it returns 0 on success, or -1 with a
// message (naming the file for decode errors) written to err[0, err_size),
// which sluice.image turns into a Lua error.
//
// A workspace holds one worker's decoder and resampler scratch; each Lua state
// makes its own, after fork. Not thread-safe; never shared.
#pragma once

#include <cstdint>

#include "counter_rng.h"

struct lua_State;

extern "C" {

struct sluice_image_workspace;

// An HWC image: dtype is a sluice::DType code (uint8 0, uint16 2).
struct sluice_image_desc {
  void* data;
  std::int32_t height, width, channels, dtype;
  std::uint64_t stride;
};

struct sluice_image_box {
  double x0, y0, x1, y1;
};

struct sluice_image_info {
  std::int32_t format;  // 0 JPEG, 1 PNG
  std::int32_t width, height, channels, bit_depth, orientation;
};

struct sluice_decode_args {
  std::int32_t channels, dtype, apply_exif_orientation, strict;  // strict: any JPEG warning is an error
  double scale;
  std::uint64_t max_pixels;
};

struct sluice_rrc_args {
  double scale_min, scale_max, ratio_min, ratio_max;
  std::int32_t attempts;
};

struct sluice_normalize_args {
  std::int32_t dtype, layout, flip;  // dtype: DType code; layout: 0 CHW, 1 HWC
  float mean[4], std[4], scale;
};

struct sluice_image_api {
  sluice_image_workspace* (*workspace_new)();
  void (*workspace_free)(sluice_image_workspace* ws);
  // args: apply_exif_orientation and strict apply, as decode would report the image.
  int (*info)(sluice_image_workspace* ws, const std::uint8_t* bytes, std::uint64_t size, const char* name,
              const sluice_decode_args* args, sluice_image_info* out, char* err, std::uint64_t err_size);
  // out: the image in the workspace, valid until its next decode; divisor: the DCT downscale.
  int (*decode)(sluice_image_workspace* ws, const std::uint8_t* bytes, std::uint64_t size, const char* name,
                const sluice_decode_args* args, sluice_image_desc* out, std::int32_t* divisor, char* err,
                std::uint64_t err_size);
  // out: x0, y0 = left, top; x1, y1 = right, bottom (integers).
  int (*random_resized_crop)(std::int32_t width, std::int32_t height, sluice::scripting::CounterRng* rng,
                             const sluice_rrc_args* args, sluice_image_box* out, char* err, std::uint64_t err_size);
  int (*resize)(sluice_image_workspace* ws, const sluice_image_desc* src, const sluice_image_box* box,
                const sluice_image_desc* dst, std::int32_t filter, char* err, std::uint64_t err_size);
  int (*flip)(const sluice_image_desc* src, const sluice_image_desc* dst, char* err, std::uint64_t err_size);
  int (*pad)(const sluice_image_desc* src, const sluice_image_desc* dst, std::int32_t top, std::int32_t left,
             const std::int32_t* fill, char* err, std::uint64_t err_size);
  int (*normalize)(const sluice_image_desc* src, void* dst, const sluice_normalize_args* args, char* err,
                   std::uint64_t err_size);
  // sluice::ops::decode_crop: box in full-size pixels, an out_height x out_width x channels result
  // (decode->channels) normalized into dst; decode->scale is ignored.
  int (*decode_crop)(sluice_image_workspace* ws, const std::uint8_t* bytes, std::uint64_t size, const char* name,
                     const sluice_decode_args* decode, const sluice_image_box* box, std::int32_t out_height,
                     std::int32_t out_width, std::int32_t filter, const sluice_normalize_args* normalize, void* dst,
                     char* err, std::uint64_t err_size);
  // sluice::ops::encode_jpeg of a uint8 gray or RGB image; out: the bytes in the workspace, valid
  // until its next encode_jpeg.
  int (*encode_jpeg)(sluice_image_workspace* ws, const sluice_image_desc* src, std::int32_t quality,
                     const std::uint8_t** out, std::uint64_t* size, char* err, std::uint64_t err_size);
};

}  // extern "C"

namespace sluice::scripting {

const sluice_image_api& image_api();

// Hands image_api() to the sluice.image module of a Lua state being set up
// (require + init). Runs under lua_pcall; raises Lua errors.
void open_image_api(lua_State* L);

}  // namespace sluice::scripting
