-- sluice.native: the C functions the host hands to Lua, typed for the FFI.
--
-- The host (scripting/src/lua_state.cpp) calls init() once per Lua state with a
-- pointer to its sluice_ffi_api table (scripting/src/ffi_api.h); the
-- declarations below must match that header field for field.
local ffi = require("ffi")

ffi.cdef[[
typedef struct sluice_rng { uint64_t key; uint64_t counter; } sluice_rng;

typedef struct sluice_ffi_api {
  uint64_t (*rng_key)(uint64_t seed, uint64_t domain, uint64_t epoch, uint64_t index);
  uint64_t (*rng_next)(sluice_rng* rng);
  double (*rng_uniform)(sluice_rng* rng);
  double (*rng_normal)(sluice_rng* rng);
  uint16_t (*f32_to_f16)(float x);
  float (*f16_to_f32)(uint16_t h);
  uint16_t (*f32_to_bf16)(float x);
  float (*bf16_to_f32)(uint16_t b);
  void* (*alloc)(uint64_t bytes);
  void (*release)(void* p);
  void (*feed_begin)(void* host, uint32_t row);
  int32_t (*feed_take)(void* host, uint32_t row, uint64_t index, struct sluice_record* out);
  void* (*example_new)(void);
  void (*example_free)(void* example);
  const char* (*example_error)(void* example);
  int32_t (*example_parse)(void* example, const void* data, uint64_t size, int32_t sequence);
  int32_t (*example_info)(void* example, const char* name, int64_t step, int32_t* kind, uint64_t* count);
  int32_t (*example_values)(void* example, const char* name, int64_t step, int32_t kind, const void** data);
  int32_t (*example_bytes)(void* example, const char* name, int64_t step, uint64_t i, const void** data, uint64_t* size);
  int32_t (*example_copy)(void* example, const char* name, int64_t step, int32_t dtype, void* dst, uint64_t bytes);
  int32_t (*example_steps)(void* example, const char* name, uint64_t* steps);
  void (*copy_to_batch)(void* dst, const void* src, uint64_t bytes);
  const char* (*setting_error)(const char* name, const char* value);
  int32_t (*feed_fill_packed)(void* host, uint32_t row, uint64_t index, void* const* dst, struct sluice_record* out);
  const char* (*setting_elsewhere)(const char* name);
  int32_t (*feed_fill_parquet)(void* host, const uint64_t* samples, uint32_t count,
                               const struct sluice_parquet_slot* slots, uint32_t fields, uint8_t* done);
} sluice_ffi_api;

typedef struct sluice_record_field {
  const char* name;
  uint64_t name_len;
  const void* data;
  uint64_t size;
  int32_t dtype;
  int32_t ndim;
  int64_t shape[8];
} sluice_record_field;

typedef struct sluice_parquet_slot {
  const char* name;
  void* dst;
  uint64_t stride;
  int32_t dtype;
  int32_t ndim;
} sluice_parquet_slot;

typedef struct sluice_record {
  uint64_t record;
  uint64_t offset;
  int64_t label;
  const char* path;
  uint64_t path_len;
  const char* key;
  uint64_t key_len;
  const sluice_record_field* fields;
  uint32_t field_count;
  const char* error;
  uint64_t error_len;
} sluice_record;

typedef struct sluice_fill_view {
  uint64_t epoch;
  uint64_t batch;
  uint32_t worker;
  uint32_t size;
  const uint64_t* samples;
  void* const* data;
  void* host;
} sluice_fill_view;
]]

local M = {}

-- api: the cdata table of functions; list_dir(dir) -> sorted array of entry names
-- (a C function; raises on error).
function M.init(api_pointer, api_size, list_dir)
  if ffi.sizeof("sluice_ffi_api") ~= api_size then
    error("sluice.native: sluice_ffi_api layout differs between C++ and Lua", 0)
  end
  M.api = ffi.cast("const sluice_ffi_api*", api_pointer)
  M.list_dir = list_dir
end

return M
