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
