// lua_state.h: one LuaJIT state with the sluice modules, owned by C++.
//
// Boundary rules, kept by every use of lua_State in this library:
// - Lua runs only under lua_pcall; a Lua error comes back to C++ as a status
//   and a message, never as a longjmp through C++ frames.
// - C functions registered with Lua catch every C++ exception, leave the catch
//   block, and only then raise the Lua error; no exception reaches Lua.
// - Outside a protected call only pushes and reads of plain values happen;
//   those fail only when Lua is out of memory, which aborts through the panic
//   handler.
//
// Thread safety: a LuaState is used by one thread; a worker process owns its own.
#pragma once

#include <optional>
#include <string>

struct lua_State;

namespace sluice::scripting {

class LuaState {
 public:
  // A fresh state: standard libraries, the embedded sluice modules preloaded,
  // the FFI table installed, the engine loaded. Throws Error.
  LuaState();
  ~LuaState();
  LuaState(const LuaState&) = delete;
  LuaState& operator=(const LuaState&) = delete;

  lua_State* get() const { return L_; }

  // Pushes the engine's function `name` (lua/sluice_engine.lua).
  void push_engine_function(const char* name);

  // Calls the function lying under the top `nargs` values, under the engine's
  // message handler. On success leaves `nresults` results and returns nullopt;
  // on failure leaves the stack as it was below the function and returns the
  // message.
  std::optional<std::string> call(int nargs, int nresults);

 private:
  lua_State* L_;
};

}  // namespace sluice::scripting
