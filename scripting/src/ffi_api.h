// ffi_api.h: the flat C functions Lua code calls through the LuaJIT FFI.
//
// Lua never calls C++ through the Lua C API on a hot path: it gets one table of
// plain function pointers (this struct, declared again for the FFI as
// `sluice_ffi_api` in lua/sluice_native.lua) and calls them as FFI cdata,
// which the JIT compiles to direct calls. Every function is noexcept and
// reports failure in its return value: nothing here can throw into Lua.
//
// The layout must match the FFI declaration field for field; the Lua side
// checks sizeof at start-up.
#pragma once

#include <cstdint>

#include "counter_rng.h"

extern "C" {

struct sluice_ffi_api {
  std::uint64_t (*rng_key)(std::uint64_t seed, std::uint64_t domain, std::uint64_t epoch,
                           std::uint64_t index);
  std::uint64_t (*rng_next)(sluice::scripting::CounterRng* rng);
  double (*rng_uniform)(sluice::scripting::CounterRng* rng);
  double (*rng_normal)(sluice::scripting::CounterRng* rng);
  std::uint16_t (*f32_to_f16)(float x);
  float (*f16_to_f32)(std::uint16_t h);
  std::uint16_t (*f32_to_bf16)(float x);
  float (*bf16_to_f32)(std::uint16_t b);
  // Bytes in the file, or -errno.
  std::int64_t (*file_size)(const char* path);
  // Reads the whole file into dst[0, capacity): bytes read, or -errno
  // (-EFBIG when the file holds more than capacity bytes).
  std::int64_t (*read_file)(const char* path, void* dst, std::uint64_t capacity);
  // 64-byte aligned memory outside the Lua heap, or NULL; release(NULL) is a no-op.
  void* (*alloc)(std::uint64_t bytes);
  void (*release)(void* p);
  // strerror for a -errno returned above.
  const char* (*error_string)(std::int64_t code);
};

// Layout shared with `sluice_fill_view` in lua/sluice_native.lua: the batch a
// worker's Lua fill() is asked to make.
struct sluice_fill_view {
  std::uint64_t epoch;
  std::uint64_t batch;
  std::uint32_t worker;
  std::uint32_t size;              // samples in the batch
  const std::uint64_t* samples;    // their dataset indices
  void* const* data;               // data[f]: field f of the whole batch, in the slot
};

}  // extern "C"

namespace sluice::scripting {

// The process-wide table handed to every Lua state.
const sluice_ffi_api& ffi_api();

}  // namespace sluice::scripting
