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

struct sluice_record;
struct sluice_parquet_slot;

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
  // 64-byte aligned memory outside the Lua heap, or NULL; release(NULL) is a no-op.
  void* (*alloc)(std::uint64_t bytes);
  void (*release)(void* p);
  // Records of a native source (sluice.files, .folders, .tfrecord, .tar, .npy).
  // `host` is the sluice_fill_view's host (a sluice::scripting::FeedHost).
  // feed_begin: row `row` of the batch is being made (BatchContext::begin_sample).
  void (*feed_begin)(void* host, std::uint32_t row);
  // feed_begin, then the record of row `row` (dataset index `index`) into *out;
  // 0, or -1 with out->error set. Views stay valid until the next feed_take.
  std::int32_t (*feed_take)(void* host, std::uint32_t row, std::uint64_t index, sluice_record* out);
  // tf.train.Example (sequence = 0) or SequenceExample (1), decoded by
  // sluice::io::Example. Every call but example_new/free returns 0, or -1
  // with the reason in example_error(). `step` < 0: the features (a
  // SequenceExample's context); otherwise step `step` of the feature_list `name`.
  void* (*example_new)();
  void (*example_free)(void* example);
  const char* (*example_error)(void* example);
  std::int32_t (*example_parse)(void* example, const void* data, std::uint64_t size, std::int32_t sequence);
  // kind: 0 absent, 1 bytes_list, 2 float_list, 3 int64_list; count: values.
  std::int32_t (*example_info)(void* example, const char* name, std::int64_t step, std::int32_t* kind,
                               std::uint64_t* count);
  // The float_list (kind 2) or int64_list (kind 3) `name`, in place.
  std::int32_t (*example_values)(void* example, const char* name, std::int64_t step, std::int32_t kind,
                                 const void** data);
  // Entry i of the bytes_list `name`, in place.
  std::int32_t (*example_bytes)(void* example, const char* name, std::int64_t step, std::uint64_t i,
                                const void** data, std::uint64_t* size);
  // The numeric list `name` converted to sluice::DType `dtype` into dst[0, bytes).
  std::int32_t (*example_copy)(void* example, const char* name, std::int64_t step, std::int32_t dtype,
                               void* dst, std::uint64_t bytes);
  // Steps in the feature_list `name` (0 when absent).
  std::int32_t (*example_steps)(void* example, const char* name, std::uint64_t* steps);
  // sluice::copy_to_batch: a tensor's bytes into its field in the slot.
  void (*copy_to_batch)(void* dst, const void* src, std::uint64_t bytes);
  // What is wrong with `value` (as text) for the run setting `name`, in the
  // words of the table of settings (sluice/settings.h), or NULL if it is fine.
  // The text lives until the thread's next call.
  const char* (*setting_error)(const char* name, const char* value);
  // A packed token row (pipelines with `pack` and no map) straight into the
  // slot: dst[0..4] are row `row`'s tokens, targets, segment_ids, positions and
  // loss_mask (sluice/text/packing.h). 0, or -1 with out->error set.
  std::int32_t (*feed_fill_packed)(void* host, std::uint32_t row, std::uint64_t index, void* const* dst,
                                   sluice_record* out);
  // For sluice.pipeline's unknown options: where the run setting `name` is
  // given when a pipeline.lua cannot set it (the command line, Python, the C
  // API), in the table's words; NULL when `name` is no such setting. The
  // text lives until the thread's next call.
  const char* (*setting_elsewhere)(const char* name);
  // Parquet rows (pipelines with sluice.parquet and no map) straight into the
  // slot: for each of the `count` samples (dataset indices) of the batch, every
  // field k (slots[k], the fields in order) written from its column, a run
  // of consecutive rows column by column (io::copy_run). done[j] = 1 for each
  // row j written whole; a row left at 0 (a null, a list of another length, a
  // read error) is for feed_take. Returns the rows written, or -1 when these
  // fields cannot be written this way (not exactly the columns, by name,
  // dtype and shape): then never call it again.
  std::int32_t (*feed_fill_parquet)(void* host, const std::uint64_t* samples, std::uint32_t count,
                                    const sluice_parquet_slot* slots, std::uint32_t fields, std::uint8_t* done);
};

// One part of a record (sluice/io/sample.h Field). dtype < 0: raw bytes;
// otherwise a sluice::DType code and the part's shape (.npy rows).
struct sluice_record_field {
  const char* name;
  std::uint64_t name_len;
  const void* data;
  std::uint64_t size;                // bytes
  std::int32_t dtype;
  std::int32_t ndim;
  std::int64_t shape[8];
};

// One field of a batch for feed_fill_parquet: its name, where row 0 of the
// batch goes and the bytes per row, its sluice::DType code (-1: a bytes
// field) and its number of dimensions (0: a scalar, 1: a vector).
struct sluice_parquet_slot {
  const char* name;
  void* dst;
  std::uint64_t stride;
  std::int32_t dtype;
  std::int32_t ndim;
};

// A record handed to Lua: views into the reader's buffers and the source's names.
struct sluice_record {
  std::uint64_t record;              // record, sample or row number within path
  std::uint64_t offset;              // byte offset in path
  std::int64_t label;                // class index (sluice.folders), else -1
  const char* path;
  std::uint64_t path_len;
  const char* key;                   // WebDataset key; key_len 0 otherwise
  std::uint64_t key_len;
  const sluice_record_field* fields;
  std::uint32_t field_count;
  const char* error;                 // feed_take returned -1: why (file, offset or record)
  std::uint64_t error_len;
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
  void* host;                      // for feed_begin/feed_take (a FeedHost)
};

}  // extern "C"

namespace sluice::scripting {

// The process-wide table handed to every Lua state.
const sluice_ffi_api& ffi_api();

}  // namespace sluice::scripting
