#include "lua_state.h"

#include <lua.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "embedded_lua.h"
#include "ffi_api.h"
#include "image_api.h"
#include "text_api.h"
#include "sluice/error.h"

namespace sluice::scripting {
namespace {

constexpr const char* kEngineKey = "sluice.engine";
constexpr const char* kHandlerKey = "sluice.message_handler";

// sluice.native.list_dir(dir) -> sorted array of the names of its regular files.
int list_dir(lua_State* L) {
  const char* dir = luaL_checkstring(L, 1);
  char error[512] = {0};
  {
    std::vector<std::string> names;
    try {
      for (const auto& entry : std::filesystem::directory_iterator(dir)) {
        if (entry.is_regular_file()) names.push_back(entry.path().filename().string());
      }
      std::sort(names.begin(), names.end());
    } catch (const std::exception& e) {
      std::snprintf(error, sizeof error, "cannot list %s: %s", dir, e.what());
    }
    if (error[0] == 0) {
      // Pushing fails only when out of memory; LuaJIT on x64 then unwinds with
      // C++-compatible unwinding, running the destructors of these frames.
      lua_createtable(L, static_cast<int>(names.size()), 0);
      for (std::size_t i = 0; i < names.size(); ++i) {
        lua_pushlstring(L, names[i].data(), names[i].size());
        lua_rawseti(L, -2, static_cast<int>(i + 1));
      }
      return 1;
    }
  }
  return luaL_error(L, "%s", error);
}

int traceback(lua_State* L) {
  const char* message = lua_tostring(L, 1);
  luaL_traceback(L, L, message ? message : "(error object is not a string)", 1);
  return 1;
}

// Runs under lua_pcall: everything that sets a fresh state up.
int setup(lua_State* L) {
  luaL_openlibs(L);
  lua_getglobal(L, "package");
  lua_getfield(L, -1, "preload");
  for (const EmbeddedModule& module : kEmbeddedModules) {
    char chunkname[96];
    std::snprintf(chunkname, sizeof chunkname, "=[%s]", module.name);
    if (luaL_loadbuffer(L, module.source, module.size, chunkname) != 0) return lua_error(L);
    lua_setfield(L, -2, module.name);
  }
  lua_pop(L, 2);

  lua_getglobal(L, "require");
  lua_pushstring(L, "sluice.native");
  lua_call(L, 1, 1);
  lua_getfield(L, -1, "init");
  lua_pushlightuserdata(L, const_cast<sluice_ffi_api*>(&ffi_api()));
  lua_pushinteger(L, static_cast<lua_Integer>(sizeof(sluice_ffi_api)));
  lua_pushcfunction(L, list_dir);
  lua_call(L, 3, 0);
  lua_pop(L, 1);
  open_image_api(L);
  open_text_api(L);

  lua_getglobal(L, "require");
  lua_pushstring(L, "sluice.engine");
  lua_call(L, 1, 1);
  lua_getfield(L, -1, "message_handler");
  lua_setfield(L, LUA_REGISTRYINDEX, kHandlerKey);
  lua_setfield(L, LUA_REGISTRYINDEX, kEngineKey);
  return 0;
}

int panic(lua_State* L) {
  const char* message = lua_tostring(L, -1);
  std::fprintf(stderr, "sluice: unprotected Lua error: %s\n", message ? message : "(no message)");
  std::abort();
}

}  // namespace

LuaState::LuaState() : L_(luaL_newstate()) {
  if (L_ == nullptr) throw Error("sluice: cannot create a Lua state (out of memory)");
  lua_atpanic(L_, panic);
  // Set-up has its own traceback handler: the engine's is not loaded yet.
  lua_pushcfunction(L_, traceback);
  lua_pushcfunction(L_, setup);
  if (lua_pcall(L_, 0, 0, 1) != 0) {
    const char* text = lua_tostring(L_, -1);
    std::string message = text ? text : "(no message)";
    lua_close(L_);
    throw Error("sluice: cannot set up Lua: " + message);
  }
  lua_pop(L_, 1);
}

LuaState::~LuaState() { lua_close(L_); }

void LuaState::push_engine_function(const char* name) {
  lua_getfield(L_, LUA_REGISTRYINDEX, kEngineKey);
  lua_getfield(L_, -1, name);
  lua_remove(L_, -2);
}

std::optional<std::string> LuaState::call(int nargs, int nresults) {
  const int function = lua_gettop(L_) - nargs;
  lua_getfield(L_, LUA_REGISTRYINDEX, kHandlerKey);
  lua_insert(L_, function);
  const int status = lua_pcall(L_, nargs, nresults, function);
  if (status == 0) {
    lua_remove(L_, function);
    return std::nullopt;
  }
  std::string message;
  if (status == LUA_ERRMEM) {
    message = "Lua ran out of memory";
  } else if (const char* text = lua_tostring(L_, -1)) {
    message = text;
  } else {
    message = "a Lua error whose value is not a string";
  }
  lua_settop(L_, function - 1);
  return message;
}

}  // namespace sluice::scripting
