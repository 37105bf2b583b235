// text_api.h: the text ops (sluice::text) as flat C functions for the LuaJIT FFI.
//
// Like image_api.h: one table of function pointers, declared again for the
// FFI as `sluice_text_api` in lua/sluice_text.lua (which checks sizeof),
// called as cdata. Every function is noexcept: it returns 0 (or a handle) on
// success, or -1 (or NULL) with a message naming the model file written to
// err[0, err_size), which sluice.text turns into a Lua error.
//
// A model handle is one process's loaded SentencePiece model with its own
// scratch for ids; each Lua state opens its own (the pipeline script runs in
// every worker). Not thread-safe; never shared.
#pragma once

#include <cstdint>

struct lua_State;

extern "C" {

struct sluice_text_api {
  void* (*sp_open)(const char* path, char* err, std::uint64_t err_size);
  void (*sp_free)(void* model);
  // The ids of data[0, size) in the model's scratch: *ids stays valid until the
  // model's next encode.
  int (*sp_encode)(void* model, const void* data, std::uint64_t size, const std::int32_t** ids,
                   std::uint64_t* count, char* err, std::uint64_t err_size);
  // what: 0 vocabulary size, 1 bos id, 2 eos id, 3 pad id, 4 unk id (-1: none).
  std::int32_t (*sp_info)(void* model, std::int32_t what);
  // Which encoder runs (tokenizer.h encoder()), valid while the model lives.
  const char* (*sp_encoder)(void* model);
};

}  // extern "C"

namespace sluice::scripting {

const sluice_text_api& text_api();

// Hands text_api() to the sluice.text module of a Lua state being set up
// (require + init). Runs under lua_pcall; raises Lua errors.
void open_text_api(lua_State* L);

}  // namespace sluice::scripting
