// The Lua state every worker gets: which LuaJIT, and the FFI table it sees.
#include <catch2/catch.hpp>

#include <lua.hpp>

#include "lua_state.h"

using sluice::scripting::LuaState;

namespace {

// Runs `chunk` on a fresh state and returns its one result as a string.
std::string eval(const char* chunk) {
  LuaState lua;
  lua_State* L = lua.get();
  REQUIRE(luaL_loadstring(L, chunk) == 0);
  const auto error = lua.call(0, 1);
  REQUIRE_FALSE(error);
  std::string result = lua_tostring(L, -1) ? lua_tostring(L, -1) : "(nil)";
  lua_pop(L, 1);
  return result;
}

}  // namespace

TEST_CASE("the LuaJIT in use is a GC64 build with the JIT on", "[lua]") {
  CHECK(eval("return tostring(require('ffi').abi('gc64'))") == "true");
  CHECK(eval("return tostring(require('jit').status())") == "true");
}

TEST_CASE("sluice modules are embedded, not read from disk", "[lua]") {
  CHECK(eval("return package.preload['sluice'] and 'yes' or 'no'") == "yes");
  CHECK(eval("return type(require('sluice').pipeline)") == "function");
}

TEST_CASE("a Lua error comes back as a message and leaves the state usable", "[lua]") {
  LuaState lua;
  lua_State* L = lua.get();
  const int top = lua_gettop(L);
  REQUIRE(luaL_loadstring(L, "error('boom')") == 0);
  const auto error = lua.call(0, 0);
  REQUIRE(error);
  CHECK_THAT(*error, Catch::Contains("boom"));
  CHECK(lua_gettop(L) == top);
  REQUIRE(luaL_loadstring(L, "return 1 + 1") == 0);
  REQUIRE_FALSE(lua.call(0, 1));
  CHECK(lua_tonumber(L, -1) == 2);
}
