// The C API: a thin shell over the C++ API that turns every exception into a
// status code and a thread-local message. Nothing thrown crosses it: every
// entry point that can throw or allocate runs inside guarded().
#include "sluice/sluice.h"

#include <dlpack/dlpack.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <optional>
#include <string>

#include "c_api_internal.h"
#include "sluice/error.h"
#include "sluice/loader.h"
#include "sluice/producer.h"
#include "sluice/record.h"

#ifndef SLUICE_VERSION
#error "SLUICE_VERSION is defined by capi/CMakeLists.txt"
#endif

static_assert(SLUICE_U8 == static_cast<int>(sluice::DType::u8) && SLUICE_F32 == static_cast<int>(sluice::DType::f32) &&
              SLUICE_BOOL == static_cast<int>(sluice::DType::boolean),
              "sluice_dtype mirrors sluice::DType");
static_assert(sizeof(sluice_dtype) == sizeof(int), "a sluice_dtype is read as the int a C host stored");
static_assert(SLUICE_ON_ERROR_SKIP == static_cast<int>(sluice::OnError::skip) &&
              SLUICE_SKIP_FILL_REPEAT == static_cast<int>(sluice::SkipFill::repeat) &&
              SLUICE_SHARD_DROP == static_cast<int>(sluice::ShardPolicy::drop),
              "the C enums mirror sluice/options.h");

namespace sluice::c_api {
namespace {

thread_local std::string last_error;
// Set instead of last_error when storing the message itself failed.
thread_local const char* last_error_fallback = nullptr;

}  // namespace

void clear_last_error() noexcept {
  last_error.clear();  // keeps the capacity: never allocates
  last_error_fallback = nullptr;
}

void set_last_error(const char* message) noexcept {
  try {
    last_error = message;
    last_error_fallback = nullptr;
  } catch (...) {
    last_error_fallback = "out of memory (while recording an error)";
  }
}

void set_resume(Options& options, const char* resume_json) {
  if (resume_json) options.resume = LoaderState::from_json(resume_json);
}

sluice_loader* new_loader(Options options, std::shared_ptr<const void> keep) {
  return new sluice_loader{Loader(std::move(options)), std::move(keep), {}, {}};
}

namespace {

// Calls a C fill function; its non-zero return becomes an exception that the
// worker reports to the consumer.
class CProducer final : public Producer {
 public:
  CProducer(sluice_fill_fn fn, void* user) : fn_(fn), user_(user) {}
  static void begin_sample(const sluice_fill* c, std::size_t j) {
    if (c && j < c->size) static_cast<const BatchContext*>(c->runtime)->begin_sample(j);
  }

  void fill(BatchContext& batch) override {
    void* data[max_fields];
    std::size_t bytes[max_fields];
    for (std::size_t f = 0; f < batch.field_count(); ++f) {
      data[f] = batch.data(f);
      bytes[f] = batch.sample_bytes(f);
    }
    sluice_fill c{batch.epoch(), batch.batch_index(), batch.worker_id(), batch.size(), batch.samples().data(),
                  batch.field_count(), data, bytes, begin_sample, &batch};
    char error[1024] = "";
    if (fn_(user_, &c, error, sizeof error) != 0) {
      throw std::runtime_error(error[0] ? error : "the C fill function returned an error");
    }
  }

 private:
  sluice_fill_fn fn_;
  void* user_;
};

// A malloc'ed copy of s, for the caller to sluice_free.
char* malloc_string(const std::string& s) {
  char* p = static_cast<char*>(std::malloc(s.size() + 1));
  if (!p) throw std::bad_alloc();
  std::memcpy(p, s.c_str(), s.size() + 1);
  return p;
}

sluice_field field_of(const FieldView& v) {
  return {v.name.data(),  // NUL-terminated inside the slot header
          static_cast<sluice_dtype>(v.dtype), static_cast<int>(v.shape.size()), v.shape.data(), v.data, v.nbytes};
}

// Throws InvalidArgument unless i < count.
void check_index(const char* function, std::size_t i, std::size_t count) {
  if (i >= count) throw InvalidArgument(std::string(function) + ": index " + std::to_string(i) + " out of range");
}

// try_next / next_for: a batch, the end, or not yet.
sluice_status deliver(sluice_loader* loader, std::optional<Batch> b, sluice_batch** out) {
  if (b) {
    *out = new sluice_batch{std::move(*b)};
    return SLUICE_OK;
  }
  return loader->loader.finished() || loader->loader.interrupted() ? SLUICE_END : SLUICE_NOT_READY;
}

}  // namespace
}  // namespace sluice::c_api

using sluice::c_api::guarded;
using sluice::c_api::InvalidArgument;
using sluice::c_api::require;

extern "C" {

int sluice_c_api_version(void) { return SLUICE_C_API_VERSION; }
const char* sluice_version(void) { return SLUICE_VERSION; }
void sluice_free(void* p) { std::free(p); }

const char* sluice_last_error(void) {
  return sluice::c_api::last_error_fallback ? sluice::c_api::last_error_fallback : sluice::c_api::last_error.c_str();
}

void sluice_options_init(sluice_options* o) {
  if (!o) return;
  *o = sluice_options{};
  o->size = sizeof(sluice_options);
  const sluice::Options d;  // plain data: no allocation for an empty Options
  o->batch_size = d.batch_size;
  o->epochs = d.epochs;
  o->world_size = d.world_size;
  o->workers = d.workers;
  o->ordered = d.ordered ? 1 : 0;
  o->memory_budget_mb = d.memory_budget_mb;
  o->on_error = static_cast<int>(d.on_error);
  o->skip_fill = static_cast<int>(d.skip_fill);
  o->shard_policy = static_cast<int>(d.shard_policy);
  o->max_retries = d.max_retries;
  o->batch_timeout_ms = d.batch_timeout_ms;
  o->held_timeout_ms = d.held_timeout_ms;
  o->worker_memory_mb = d.worker_memory_mb;
  o->trace = d.trace ? 1 : 0;
}

sluice_status sluice_loader_create(const sluice_options* o, sluice_loader** out) {
  return guarded([&] {
    require(o, "sluice_loader_create", "options");
    require(out, "sluice_loader_create", "out");
    *out = nullptr;
    if (o->size < offsetof(sluice_options, user) + sizeof o->user) {  // version 1 ends with user
      throw InvalidArgument("sluice_loader_create: options->size is " + std::to_string(o->size) +
                            "; sluice_options_init sets it to sizeof(sluice_options)");
    }
    if (!o->fill) throw InvalidArgument("sluice_loader_create: options.fill is NULL");
    if (o->field_count > 0 && !o->fields) throw InvalidArgument("sluice_loader_create: options.fields is NULL");
    if (o->field_count > sluice::max_fields) {
      throw InvalidArgument("sluice_loader_create: at most " + std::to_string(sluice::max_fields) + " fields");
    }
    sluice::Options opt;
    opt.dataset_size = o->dataset_size;
    opt.batch_size = o->batch_size;
    opt.drop_last = o->drop_last != 0;
    opt.shuffle = o->shuffle != 0;
    opt.seed = o->seed;
    opt.epochs = o->epochs;
    opt.rank = o->rank;
    opt.world_size = o->world_size;
    opt.workers = o->workers;
    opt.slots = o->slots;
    opt.slot_bytes = o->slot_bytes;
    opt.ordered = o->ordered != 0;
    for (std::size_t f = 0; f < o->field_count; ++f) {
      const sluice_field_spec& s = o->fields[f];
      if (!s.name || s.ndim < 0 || (s.ndim > 0 && !s.shape)) {
        throw InvalidArgument("sluice_loader_create: field " + std::to_string(f) + " has no name or a bad shape");
      }
      // As the int a C host may have stored: a C++ read of a sluice_dtype
      // outside the enumerators' range is undefined.
      int dtype = 0;
      std::memcpy(&dtype, &s.dtype, sizeof dtype);
      if (dtype < 0 || dtype > SLUICE_BOOL) {
        throw InvalidArgument("sluice_loader_create: field '" + std::string(s.name) + "' has dtype " +
                              std::to_string(dtype) + ", which is no sluice_dtype (SLUICE_U8 to SLUICE_BOOL)");
      }
      opt.fields.push_back({s.name, static_cast<sluice::DType>(dtype), {s.shape, s.shape + s.ndim}});
    }
    opt.producer = std::make_shared<sluice::c_api::CProducer>(o->fill, o->user);
    if (o->size >= offsetof(sluice_options, memory_budget_mb) + sizeof o->memory_budget_mb) {  // version 3
      opt.max_workers = o->max_workers;
      opt.memory_budget_mb = o->memory_budget_mb;
    }
    if (o->size >= offsetof(sluice_options, trace) + sizeof o->trace) {  // version 4
      if (o->on_error != SLUICE_ON_ERROR_FAIL && o->on_error != SLUICE_ON_ERROR_SKIP) {
        throw InvalidArgument("sluice_loader_create: options.on_error is " + std::to_string(o->on_error) +
                              ", not SLUICE_ON_ERROR_FAIL or SLUICE_ON_ERROR_SKIP");
      }
      if (o->skip_fill != SLUICE_SKIP_FILL_SHRINK && o->skip_fill != SLUICE_SKIP_FILL_REPEAT) {
        throw InvalidArgument("sluice_loader_create: options.skip_fill is " + std::to_string(o->skip_fill) +
                              ", not SLUICE_SKIP_FILL_SHRINK or SLUICE_SKIP_FILL_REPEAT");
      }
      if (o->shard_policy != SLUICE_SHARD_PAD && o->shard_policy != SLUICE_SHARD_DROP) {
        throw InvalidArgument("sluice_loader_create: options.shard_policy is " + std::to_string(o->shard_policy) +
                              ", not SLUICE_SHARD_PAD or SLUICE_SHARD_DROP");
      }
      opt.on_error = static_cast<sluice::OnError>(o->on_error);
      opt.skip_fill = static_cast<sluice::SkipFill>(o->skip_fill);
      opt.shard_policy = static_cast<sluice::ShardPolicy>(o->shard_policy);
      opt.max_retries = o->max_retries;
      opt.batch_timeout_ms = o->batch_timeout_ms;
      opt.held_timeout_ms = o->held_timeout_ms;
      opt.worker_memory_mb = o->worker_memory_mb;
      opt.trace = o->trace != 0;
    }
    sluice::c_api::set_resume(opt, sluice::c_api::resume_json_of(*o));
    *out = sluice::c_api::new_loader(std::move(opt));
    return SLUICE_OK;
  });
}

void sluice_loader_destroy(sluice_loader* loader) { delete loader; }

sluice_status sluice_loader_next(sluice_loader* loader, sluice_batch** out) {
  return guarded([&] {
    require(loader, "sluice_loader_next", "loader");
    require(out, "sluice_loader_next", "out");
    *out = nullptr;
    std::optional<sluice::Batch> b = loader->loader.next();
    if (!b) return SLUICE_END;
    *out = new sluice_batch{std::move(*b)};
    return SLUICE_OK;
  });
}

sluice_status sluice_loader_try_next(sluice_loader* loader, sluice_batch** out) {
  return guarded([&] {
    require(loader, "sluice_loader_try_next", "loader");
    require(out, "sluice_loader_try_next", "out");
    *out = nullptr;
    return sluice::c_api::deliver(loader, loader->loader.try_next(), out);
  });
}

sluice_status sluice_loader_next_for(sluice_loader* loader, int64_t timeout_ms, sluice_batch** out) {
  return guarded([&] {
    require(loader, "sluice_loader_next_for", "loader");
    require(out, "sluice_loader_next_for", "out");
    *out = nullptr;
    // Negative: no limit, as poll(2) reads -1 (milliseconds::max() waits as next() does).
    const auto timeout = timeout_ms < 0 ? std::chrono::milliseconds::max() : std::chrono::milliseconds(timeout_ms);
    return sluice::c_api::deliver(loader, loader->loader.next_for(timeout), out);
  });
}

int sluice_loader_ready_fd(sluice_loader* loader) {
  int fd = -1;
  guarded([&] {
    require(loader, "sluice_loader_ready_fd", "loader");
    fd = loader->loader.ready_fd();
    return SLUICE_OK;
  });
  return fd;
}

int sluice_loader_finished(const sluice_loader* loader) { return loader && loader->loader.finished() ? 1 : 0; }

void sluice_loader_interrupt(sluice_loader* loader) {
  if (loader) loader->loader.interrupt();
}

size_t sluice_loader_field_count(const sluice_loader* loader) {
  return loader ? loader->loader.options().fields.size() : 0;
}

sluice_status sluice_loader_field(const sluice_loader* loader, size_t i, sluice_field_spec* out) {
  return guarded([&] {
    require(loader, "sluice_loader_field", "loader");
    require(out, "sluice_loader_field", "out");
    const std::vector<sluice::FieldSpec>& fields = loader->loader.options().fields;
    sluice::c_api::check_index("sluice_loader_field", i, fields.size());
    const sluice::FieldSpec& f = fields[i];
    *out = {f.name.c_str(), static_cast<sluice_dtype>(f.dtype), static_cast<int>(f.shape.size()), f.shape.data()};
    return SLUICE_OK;
  });
}

sluice_status sluice_loader_state_json(const sluice_loader* loader, char** out) {
  return guarded([&] {
    require(loader, "sluice_loader_state_json", "loader");
    require(out, "sluice_loader_state_json", "out");
    *out = nullptr;
    *out = sluice::c_api::malloc_string(loader->loader.state().to_json());
    return SLUICE_OK;
  });
}

sluice_status sluice_loader_trace_json(const sluice_loader* loader, char** out) {
  return guarded([&] {
    require(loader, "sluice_loader_trace_json", "loader");
    require(out, "sluice_loader_trace_json", "out");
    *out = nullptr;
    *out = sluice::c_api::malloc_string(loader->loader.trace_json());
    return SLUICE_OK;
  });
}

sluice_status sluice_loader_stats(sluice_loader* loader, sluice_stats* out) {
  return guarded([&] {
    require(loader, "sluice_loader_stats", "loader");
    require(out, "sluice_loader_stats", "out");
    if (out->size < offsetof(sluice_stats, batches_delivered)) {
      throw InvalidArgument("sluice_loader_stats: out->size must be sizeof(sluice_stats)");
    }
    sluice::Stats s = loader->loader.stats();
    std::vector<const char*> reasons;
    reasons.reserve(s.skipped_samples.size());
    for (std::size_t i = 0; i < s.skipped_samples.size(); ++i) {
      reasons.push_back(i < s.skip_reasons.size() ? s.skip_reasons[i].c_str() : "");
    }
    sluice_stats c{};
    c.size = out->size;
    c.batches_delivered = s.batches_delivered;
    c.samples_delivered = s.samples_delivered;
    c.bytes_delivered = s.bytes_delivered;
    c.consumer_wait_ns = s.consumer_wait_ns;
    c.consumer_waits = s.consumer_waits;
    c.max_in_flight = s.max_in_flight;
    c.worker_restarts = s.worker_restarts;
    c.first_batch_ns = s.first_batch_ns;
    c.slots_full_ns = s.slots_full_ns;
    c.worker_fill_ns = s.worker_fill_ns;
    c.worker_idle_ns = s.worker_idle_ns;
    c.batches_retried = s.batches_retried;
    c.empty_batches = s.empty_batches;
    c.skipped_count = s.skipped_samples.size();
    c.skipped_samples = s.skipped_samples.data();  // moved below: the buffer stays where it is
    c.skip_reasons = reasons.data();
    c.worker_cpu_ns = s.worker_cpu_ns;
    c.worker_runqueue_ns = s.worker_runqueue_ns;
    c.workers = s.workers;
    // Nothing below throws: the arrays and the string move into the loader,
    // which owns them until the next call.
    loader->stats = std::move(s);
    loader->skip_reasons = std::move(reasons);
    c.autotune = loader->stats.autotune.c_str();  // after the move: a short string's buffer moves with it
    std::memcpy(out, &c, std::min(out->size, sizeof c));
    return SLUICE_OK;
  });
}

sluice_status sluice_loader_skip_log(sluice_loader* loader, char** out) {
  return guarded([&] {
    require(loader, "sluice_loader_skip_log", "loader");
    require(out, "sluice_loader_skip_log", "out");
    *out = nullptr;
    const sluice::Stats s = loader->loader.stats();
    std::string log;
    for (std::size_t i = 0; i < s.skipped_samples.size(); ++i) {
      log += sluice::skip_json(s.skipped_samples[i], std::nullopt, i < s.skip_reasons.size() ? s.skip_reasons[i] : "");
      log += '\n';
    }
    *out = sluice::c_api::malloc_string(log);
    return SLUICE_OK;
  });
}

uint64_t sluice_batch_epoch(const sluice_batch* b) { return b ? b->batch.epoch() : 0; }
uint64_t sluice_batch_index(const sluice_batch* b) { return b ? b->batch.index() : 0; }
size_t sluice_batch_size(const sluice_batch* b) { return b ? b->batch.size() : 0; }
const uint64_t* sluice_batch_sample_ids(const sluice_batch* b) { return b ? b->batch.sample_ids().data() : nullptr; }
size_t sluice_batch_field_count(const sluice_batch* b) { return b ? b->batch.field_count() : 0; }

sluice_status sluice_batch_field(const sluice_batch* b, size_t i, sluice_field* out) {
  return guarded([&] {
    require(b, "sluice_batch_field", "batch");
    require(out, "sluice_batch_field", "out");
    sluice::c_api::check_index("sluice_batch_field", i, b->batch.field_count());
    *out = sluice::c_api::field_of(b->batch.field(i));
    return SLUICE_OK;
  });
}

sluice_status sluice_batch_field_by_name(const sluice_batch* b, const char* name, sluice_field* out, size_t* index) {
  return guarded([&] {
    require(b, "sluice_batch_field_by_name", "batch");
    require(name, "sluice_batch_field_by_name", "name");
    require(out, "sluice_batch_field_by_name", "out");
    for (std::size_t i = 0; i < b->batch.field_count(); ++i) {
      const sluice::FieldView v = b->batch.field(i);
      if (v.name != name) continue;
      *out = sluice::c_api::field_of(v);
      if (index) *index = i;
      return SLUICE_OK;
    }
    throw InvalidArgument(std::string("sluice_batch_field_by_name: no field named '") + name + "'");
  });
}

sluice_status sluice_batch_field_dlpack(sluice_batch* b, size_t i, DLManagedTensor** out) {
  return guarded([&] {
    require(b, "sluice_batch_field_dlpack", "batch");
    require(out, "sluice_batch_field_dlpack", "out");
    *out = nullptr;
    sluice::c_api::check_index("sluice_batch_field_dlpack", i, b->batch.field_count());
    *out = b->batch.to_dlpack(i);  // holds its own reference to the slot
    return SLUICE_OK;
  });
}

void sluice_batch_release(sluice_batch* b) { delete b; }

}  // extern "C"
