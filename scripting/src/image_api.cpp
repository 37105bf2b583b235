#include "image_api.h"

#include <lua.hpp>

#include <cstdio>
#include <exception>
#include <vector>

#include "sluice/ops/decode.h"
#include "sluice/ops/decode_crop.h"
#include "sluice/ops/encode.h"
#include "sluice/ops/geometry.h"
#include "sluice/ops/normalize.h"

struct sluice_image_workspace {
  sluice::ops::ImageDecoder decoder;
  sluice::ops::Resampler resampler;
  std::vector<std::byte> jpeg;  // the last encode_jpeg's bytes
};

namespace sluice::scripting {
namespace {

using ops::Image;

Image image_of(const sluice_image_desc& d) {
  return Image{d.data, d.height, d.width, d.channels, static_cast<DType>(d.dtype), static_cast<std::size_t>(d.stride)};
}

sluice_image_desc desc_of(const Image& image) {
  return {image.data, image.height, image.width, image.channels, static_cast<std::int32_t>(image.dtype),
          image.stride};
}

// Runs fn; an exception becomes -1 and its message in err.
template <typename Fn>
int guarded(char* err, std::uint64_t err_size, Fn&& fn) noexcept {
  try {
    fn();
    return 0;
  } catch (const std::exception& e) {
    std::snprintf(err, err_size, "%s", e.what());
  } catch (...) {
    std::snprintf(err, err_size, "unknown error in an image op");
  }
  return -1;
}

sluice_image_workspace* workspace_new() noexcept {
  try {
    return new sluice_image_workspace();
  } catch (...) {
    return nullptr;
  }
}

void workspace_free(sluice_image_workspace* ws) noexcept { delete ws; }

ops::DecodeOptions options_of(const sluice_decode_args& a) {
  return {.channels = a.channels, .dtype = static_cast<DType>(a.dtype), .scale = a.scale,
          .apply_exif_orientation = a.apply_exif_orientation != 0, .max_pixels = a.max_pixels,
          .strict = a.strict != 0};
}

int info(sluice_image_workspace* ws, const std::uint8_t* bytes, std::uint64_t size, const char* name,
         const sluice_decode_args* a, sluice_image_info* out, char* err, std::uint64_t err_size) noexcept {
  return guarded(err, err_size, [&] {
    const ops::ImageInfo i = ws->decoder.info(bytes, size, name, options_of(*a));
    *out = {static_cast<std::int32_t>(i.format), i.width, i.height, i.channels, i.bit_depth, i.orientation};
  });
}

int decode(sluice_image_workspace* ws, const std::uint8_t* bytes, std::uint64_t size, const char* name,
           const sluice_decode_args* a, sluice_image_desc* out, std::int32_t* divisor, char* err,
           std::uint64_t err_size) noexcept {
  return guarded(err, err_size, [&] {
    const ops::DecodedImage d = ws->decoder.decode(bytes, size, name, options_of(*a));
    *out = desc_of(d.image);
    *divisor = d.scale_divisor;
  });
}

double uniform_of(void* rng) { return rng_uniform(*static_cast<CounterRng*>(rng)); }

int random_resized_crop(std::int32_t width, std::int32_t height, CounterRng* rng, const sluice_rrc_args* a,
                        sluice_image_box* out, char* err, std::uint64_t err_size) noexcept {
  return guarded(err, err_size, [&] {
    const ops::Rect r = ops::random_resized_crop(
        width, height, ops::UniformSource{uniform_of, rng},
        {.scale_min = a->scale_min, .scale_max = a->scale_max, .ratio_min = a->ratio_min,
         .ratio_max = a->ratio_max, .attempts = a->attempts});
    *out = {static_cast<double>(r.x), static_cast<double>(r.y), static_cast<double>(r.x + r.width),
            static_cast<double>(r.y + r.height)};
  });
}

int resize(sluice_image_workspace* ws, const sluice_image_desc* src, const sluice_image_box* box,
           const sluice_image_desc* dst, std::int32_t filter, char* err, std::uint64_t err_size) noexcept {
  return guarded(err, err_size, [&] {
    ws->resampler.resize(image_of(*src), ops::Box{box->x0, box->y0, box->x1, box->y1}, image_of(*dst),
                         filter == 0 ? ops::Filter::bilinear : ops::Filter::area);
  });
}

int flip(const sluice_image_desc* src, const sluice_image_desc* dst, char* err, std::uint64_t err_size) noexcept {
  return guarded(err, err_size, [&] { ops::flip_horizontal(image_of(*src), image_of(*dst)); });
}

int pad(const sluice_image_desc* src, const sluice_image_desc* dst, std::int32_t top, std::int32_t left,
        const std::int32_t* fill, char* err, std::uint64_t err_size) noexcept {
  return guarded(err, err_size, [&] {
    ops::pad(image_of(*src), image_of(*dst), top, left, {fill[0], fill[1], fill[2], fill[3]});
  });
}

ops::NormalizeOptions normalize_options_of(const sluice_normalize_args& a) {
  ops::NormalizeOptions o;
  o.dtype = static_cast<DType>(a.dtype);
  o.layout = a.layout == 0 ? ops::Layout::chw : ops::Layout::hwc;
  o.flip = a.flip != 0;
  o.scale = a.scale;
  for (int k = 0; k < 4; ++k) o.mean[k] = a.mean[k], o.std[k] = a.std[k];
  return o;
}

int normalize(const sluice_image_desc* src, void* dst, const sluice_normalize_args* a, char* err,
              std::uint64_t err_size) noexcept {
  return guarded(err, err_size, [&] { ops::normalize(image_of(*src), dst, normalize_options_of(*a)); });
}

int decode_crop(sluice_image_workspace* ws, const std::uint8_t* bytes, std::uint64_t size, const char* name,
                const sluice_decode_args* decode, const sluice_image_box* box, std::int32_t out_height,
                std::int32_t out_width, std::int32_t filter, const sluice_normalize_args* normalize, void* dst,
                char* err, std::uint64_t err_size) noexcept {
  return guarded(err, err_size, [&] {
    ops::decode_crop(ws->decoder, ws->resampler, bytes, size, name, ops::Box{box->x0, box->y0, box->x1, box->y1},
                     dst,
                     {.height = out_height, .width = out_width,
                      .filter = filter == 0 ? ops::Filter::bilinear : ops::Filter::area,
                      .decode = options_of(*decode), .normalize = normalize_options_of(*normalize)});
  });
}

int encode_jpeg(sluice_image_workspace* ws, const sluice_image_desc* src, std::int32_t quality,
                const std::uint8_t** out, std::uint64_t* size, char* err, std::uint64_t err_size) noexcept {
  return guarded(err, err_size, [&] {
    ops::encode_jpeg(image_of(*src), {.quality = quality}, ws->jpeg);
    *out = reinterpret_cast<const std::uint8_t*>(ws->jpeg.data());
    *size = ws->jpeg.size();
  });
}

constexpr sluice_image_api kApi = {
    workspace_new, workspace_free, info, decode, random_resized_crop, resize, flip, pad, normalize, decode_crop,
    encode_jpeg,
};

}  // namespace

const sluice_image_api& image_api() { return kApi; }

void open_image_api(lua_State* L) {
  lua_getglobal(L, "require");
  lua_pushstring(L, "sluice.image");
  lua_call(L, 1, 1);
  lua_getfield(L, -1, "init");
  lua_pushlightuserdata(L, const_cast<sluice_image_api*>(&image_api()));
  lua_pushinteger(L, static_cast<lua_Integer>(sizeof(sluice_image_api)));
  lua_call(L, 2, 0);
  lua_pop(L, 1);
}

}  // namespace sluice::scripting
