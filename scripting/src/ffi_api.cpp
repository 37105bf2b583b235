#include "ffi_api.h"

#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>

#include "sluice/batch_copy.h"
#include "sluice/half.h"
#include "record_feed.h"
#include "sluice/dtype.h"
#include "sluice/io/example.h"
#include "sluice/run_settings.h"
#include "sluice/settings.h"

namespace sluice::scripting {
namespace {

std::uint64_t ffi_rng_key(std::uint64_t seed, std::uint64_t domain, std::uint64_t epoch,
                          std::uint64_t index) noexcept {
  return rng_key(seed, domain, epoch, index);
}
std::uint64_t ffi_rng_next(CounterRng* rng) noexcept { return rng_next(*rng); }
double ffi_rng_uniform(CounterRng* rng) noexcept { return rng_uniform(*rng); }
double ffi_rng_normal(CounterRng* rng) noexcept { return rng_normal(*rng); }
std::uint16_t ffi_f32_to_f16(float x) noexcept { return float_to_half(x); }
float ffi_f16_to_f32(std::uint16_t h) noexcept { return half_to_float(h); }
std::uint16_t ffi_f32_to_bf16(float x) noexcept { return float_to_bfloat16(x); }
float ffi_bf16_to_f32(std::uint16_t b) noexcept { return bfloat16_to_float(b); }

void* ffi_alloc(std::uint64_t bytes) noexcept {
  const std::uint64_t rounded = (bytes + 63) / 64 * 64;
  return std::aligned_alloc(64, rounded == 0 ? 64 : rounded);
}
void ffi_release(void* p) noexcept { std::free(p); }

void ffi_feed_begin(void* host, std::uint32_t row) noexcept {
  const auto* h = static_cast<const FeedHost*>(host);
  if (h != nullptr && h->batch != nullptr) h->batch->begin_sample(row);
}

std::int32_t ffi_feed_take(void* host, std::uint32_t row, std::uint64_t index, sluice_record* out) noexcept {
  ffi_feed_begin(host, row);
  const auto* h = static_cast<const FeedHost*>(host);
  if (h == nullptr || h->feed == nullptr) {
    static constexpr char kNoFeed[] = "internal: this pipeline's source has no records to take";
    *out = sluice_record{};
    out->error = kNoFeed;
    out->error_len = sizeof kNoFeed - 1;
    return -1;
  }
  if (h->feed->take(index, *out)) return 0;
  out->error = h->feed->error().data();
  out->error_len = h->feed->error().size();
  return -1;
}

std::int32_t ffi_feed_fill_packed(void* host, std::uint32_t row, std::uint64_t index, void* const* dst,
                                  sluice_record* out) noexcept {
  ffi_feed_begin(host, row);
  const auto* h = static_cast<const FeedHost*>(host);
  *out = sluice_record{};
  if (h != nullptr && h->feed != nullptr &&
      h->feed->fill_packed(index, {static_cast<std::int64_t*>(dst[0]), static_cast<std::int64_t*>(dst[1]),
                                   static_cast<std::int32_t*>(dst[2]), static_cast<std::int32_t*>(dst[3]),
                                   static_cast<float*>(dst[4])}))
    return 0;
  static constexpr char kNoFeed[] = "internal: this pipeline's source has no packed rows";
  const std::string_view why = h != nullptr && h->feed != nullptr ? std::string_view(h->feed->error()) : kNoFeed;
  out->error = why.data();
  out->error_len = why.size();
  return -1;
}

std::int32_t ffi_feed_fill_parquet(void* host, const std::uint64_t* samples, std::uint32_t count,
                                   const sluice_parquet_slot* slots, std::uint32_t fields, std::uint8_t* done) noexcept {
  const auto* h = static_cast<const FeedHost*>(host);
  if (h == nullptr || h->feed == nullptr) return -1;
  return h->feed->fill_parquet({samples, count}, {slots, fields}, done, h->batch);
}

// A parsed tf.train.Example and the reason its last call failed.
struct ExampleHandle {
  io::Example example;
  std::string error;
};

// Runs fn() for the handle; -1 with the reason kept on an exception.
template <typename Fn>
std::int32_t guarded(void* handle, Fn&& fn) noexcept {
  auto* h = static_cast<ExampleHandle*>(handle);
  try {
    fn(h->example);
    return 0;
  } catch (const std::exception& e) {
    try {
      h->error = e.what();
    } catch (...) {
    }
  }
  return -1;
}

void* ffi_example_new() noexcept {
  try {
    return new ExampleHandle();
  } catch (...) {
    return nullptr;
  }
}
void ffi_example_free(void* handle) noexcept { delete static_cast<ExampleHandle*>(handle); }
const char* ffi_example_error(void* handle) noexcept {
  return static_cast<ExampleHandle*>(handle)->error.c_str();
}

std::int32_t ffi_example_parse(void* handle, const void* data, std::uint64_t size,
                              std::int32_t sequence) noexcept {
  return guarded(handle, [&](io::Example& ex) {
    const std::span<const std::byte> bytes(static_cast<const std::byte*>(data), static_cast<std::size_t>(size));
    if (sequence) ex.parse_sequence(bytes);
    else ex.parse(bytes);
  });
}

// A negative step from Lua: the features.
std::size_t step_of(std::int64_t step) {
  return step < 0 ? io::Example::kFeatures : static_cast<std::size_t>(step);
}

std::int32_t ffi_example_info(void* handle, const char* name, std::int64_t step, std::int32_t* kind,
                              std::uint64_t* count) noexcept {
  return guarded(handle, [&](io::Example& ex) {
    *kind = static_cast<std::int32_t>(ex.kind(name, step_of(step)));
    *count = ex.count(name, step_of(step));
  });
}

std::int32_t ffi_example_values(void* handle, const char* name, std::int64_t step, std::int32_t kind,
                                const void** data) noexcept {
  return guarded(handle, [&](io::Example& ex) {
    if (kind == static_cast<std::int32_t>(io::FeatureKind::float_list)) *data = ex.floats(name, step_of(step)).data();
    else *data = ex.int64s(name, step_of(step)).data();
  });
}

std::int32_t ffi_example_bytes(void* handle, const char* name, std::int64_t step, std::uint64_t i,
                               const void** data, std::uint64_t* size) noexcept {
  return guarded(handle, [&](io::Example& ex) {
    const std::string_view entry = ex.bytes_at(name, static_cast<std::size_t>(i), step_of(step));
    *data = entry.data();
    *size = entry.size();
  });
}

std::int32_t ffi_example_steps(void* handle, const char* name, std::uint64_t* steps) noexcept {
  return guarded(handle, [&](io::Example& ex) { *steps = ex.steps(name); });
}

void ffi_copy_to_batch(void* dst, const void* src, std::uint64_t bytes) noexcept {
  copy_to_batch(dst, src, static_cast<std::size_t>(bytes));
}

std::int32_t ffi_example_copy(void* handle, const char* name, std::int64_t step, std::int32_t dtype,
                              void* dst, std::uint64_t bytes) noexcept {
  return guarded(handle, [&](io::Example& ex) {
    ex.copy_to(name, static_cast<DType>(dtype), {static_cast<std::byte*>(dst), static_cast<std::size_t>(bytes)},
               step_of(step));
  });
}

const char* ffi_setting_error(const char* name, const char* value) noexcept {
  thread_local std::string message;
  try {
    RunSettings().set(name, value);
    return nullptr;
  } catch (const std::exception& e) {
    try {
      message = e.what();
      return message.c_str();
    } catch (...) {
    }
  }
  return "a value this setting does not take";
}

const char* ffi_setting_elsewhere(const char* name) noexcept {
  thread_local std::string message;
  try {
    const Setting* s = find_setting(name);
    if (!s || s->pipeline) return nullptr;
    std::string flag = s->name;
    for (char& c : flag)
      if (c == '_') c = '-';
    message = "'" + s->name + "' is a run setting, given where the run starts, not in pipeline.lua: on the command line (--" +
              flag + " VALUE), in Python as a keyword (" + s->name + "=VALUE) or to the C API as \"" + s->name +
              "=VALUE\"; it takes " + s->takes;
    return message.c_str();
  } catch (...) {
    return nullptr;
  }
}

constexpr sluice_ffi_api kApi = {
    ffi_rng_key,        ffi_rng_next,      ffi_rng_uniform,    ffi_rng_normal,
    ffi_f32_to_f16,     ffi_f16_to_f32,    ffi_f32_to_bf16,    ffi_bf16_to_f32,
    ffi_alloc,          ffi_release,       ffi_feed_begin,     ffi_feed_take,
    ffi_example_new,    ffi_example_free,  ffi_example_error,  ffi_example_parse,
    ffi_example_info,   ffi_example_values, ffi_example_bytes, ffi_example_copy,
    ffi_example_steps,  ffi_copy_to_batch, ffi_setting_error, ffi_feed_fill_packed,
    ffi_setting_elsewhere, ffi_feed_fill_parquet,
};

}  // namespace

const sluice_ffi_api& ffi_api() { return kApi; }

}  // namespace sluice::scripting
