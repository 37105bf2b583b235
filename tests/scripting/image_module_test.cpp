// sluice.image options that pass through the FFI table to sluice::ops.
#include <catch2/catch.hpp>

#include "skip.h"

#include <lua.hpp>

#include <filesystem>
#include <string>

#include "lua_state.h"

using sluice::scripting::LuaState;
using Catch::Matchers::Contains;

TEST_CASE("image.decode and image.info take strict: a JPEG warning becomes an error", "[lua][image]") {
  const std::string hopper = SLUICE_SHARED_DATA "/images/pillow-tests/hopper.jpg";
  if (!std::filesystem::exists(hopper)) {
    SKIP_TEST(hopper << " is absent (the real-data fixtures)");
  }
  LuaState lua;
  lua_State* L = lua.get();
  // hopper.jpg with two stray bytes before its first DQT marker (FF DB).
  const std::string chunk = R"(
    local image, ffi = require('sluice.image'), require('ffi')
    local f = assert(io.open(..., 'rb'))
    local s = f:read('*a')
    f:close()
    local at = s:find('\255\219', 1, true)
    local stray = s:sub(1, at - 1) .. '\0\0' .. s:sub(at)
    local p = ffi.cast('const uint8_t*', stray)
    local img = image.decode(p, { name = 'stray.jpg', size = #stray })
    local info = image.info(p, 'stray.jpg', { size = #stray, exif = true })
    local ok_decode, decode_error = pcall(image.decode, p, { name = 'stray.jpg', size = #stray, strict = true })
    local ok_info, info_error = pcall(image.info, p, 'stray.jpg', { size = #stray, strict = true })
    return table.concat({ img.shape[1], img.shape[2], info.width, tostring(ok_decode), decode_error,
                          tostring(ok_info), info_error }, '|')
  )";
  REQUIRE(luaL_loadstring(L, chunk.c_str()) == 0);
  lua_pushstring(L, hopper.c_str());
  const auto error = lua.call(1, 1);
  REQUIRE_FALSE(error);
  const std::string result = lua_tostring(L, -1);
  INFO(result);
  CHECK(result.rfind("128|128|128|false|", 0) == 0);
  CHECK_THAT(result, Contains("stray.jpg: JPEG warning (an error under DecodeOptions::strict): Corrupt JPEG data: 2 "
                              "extraneous bytes before marker 0xdb|false|"));
  CHECK(result.find("extraneous") != result.rfind("extraneous"));  // both calls refused it
}

TEST_CASE("image.decode_crop gives decode + resize + normalize's values, and names the file on error",
          "[lua][image]") {
  const std::string dir = SLUICE_SHARED_DATA "/images/pillow-tests";
  if (!std::filesystem::exists(dir + "/flower.jpg")) {
    SKIP_TEST(dir << " is absent (the real-data fixtures)");
  }
  LuaState lua;
  lua_State* L = lua.get();
  // Random resized crops of real photos (baseline, progressive, EXIF-rotated,
  // PNG), both ways, compared value for value.
  const std::string chunk = R"(
    local image, tensor, rng_mod = require('sluice.image'), require('sluice.tensor'), require('sluice.rng')
    local dir = ...
    local checked, differ = 0, 0
    for _, case in ipairs({ { 'flower.jpg', false }, { 'app13-multiple.jpg', false },
                            { 'hopper_orientation_6.jpg', true }, { 'hopper.png', false } }) do
      local f = assert(io.open(dir .. '/' .. case[1], 'rb'))
      local s = f:read('*a')
      f:close()
      local bytes = tensor.new('uint8', { #s })
      require('ffi').copy(bytes.data, s, #s)
      local info = image.info(bytes, case[1], { exif = case[2] })
      local rng = rng_mod.new(7, 0, 0, 0)
      for i = 1, 6 do
        local box = image.random_resized_crop(info.width, info.height, rng)
        local opts = { mean = image.IMAGENET_MEAN, std = image.IMAGENET_STD, flip = i % 2 == 0 }
        local img = image.decode(bytes, { name = case[1], exif = case[2], scale = image.shrink(box, 56, 48) })
        local crop = image.resize(img, tensor.new('uint8', { 56, 48, 3 }), { box = box })
        local split = image.normalize(crop, tensor.new('float32', { 3, 56, 48 }), opts)
        opts.name, opts.exif = case[1], case[2]
        local fused = image.decode_crop(bytes, box, tensor.new('float32', { 3, 56, 48 }), opts)
        for k = 0, 3 * 56 * 48 - 1 do
          if split.data[k] ~= fused.data[k] then differ = differ + 1 end
        end
        checked = checked + 1
      end
    end
    local f = assert(io.open(dir .. '/hopper.jpg', 'rb'))
    local s = f:read('*a')
    f:close()
    local p = require('ffi').cast('const uint8_t*', s)
    local out = tensor.new('float32', { 3, 8, 8 })
    local _, outside = pcall(image.decode_crop, p, { x0 = 0, y0 = 0, x1 = 200, y1 = 10 }, out,
                             { name = 'h.jpg', size = #s })
    local _, typo = pcall(image.decode_crop, p, { x0 = 0, y0 = 0, x1 = 20, y1 = 10 }, out,
                          { name = 'h.jpg', size = #s, flipp = true })
    local _, array = pcall(image.decode_crop, p, { 0, 0, 20, 10 }, out, { name = 'h.jpg', size = #s })
    local _, sized = pcall(image.crop, out, { x = 0, y = 0, width = 4, height = 4 }, out)
    return table.concat({ checked, differ, outside, typo, array, sized }, '|')
  )";
  REQUIRE(luaL_loadstring(L, chunk.c_str()) == 0);
  lua_pushstring(L, dir.c_str());
  const auto error = lua.call(1, 1);
  INFO((error ? *error : std::string()));
  REQUIRE_FALSE(error);
  const std::string result = lua_tostring(L, -1);
  INFO(result);
  CHECK(result.rfind("24|0|", 0) == 0);
  CHECK_THAT(result, Contains("h.jpg: the region 200x10 at (0, 0) is not inside the 128x128 image"));
  CHECK_THAT(result, Contains("sluice.image.decode_crop: unknown option 'flipp'"));
  CHECK_THAT(result, Contains("sluice.image.decode_crop: box must be {x0 =, y0 =, x1 =, y1 =} (as "
                              "image.random_resized_crop returns it), not an array"));
  CHECK_THAT(result, Contains("sluice.image.crop: box must be") && Contains("not {x, y, width, height}"));
}
