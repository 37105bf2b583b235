// The C API: a thin shell over the C++ API that turns every exception into a
// status code and a thread-local message. Nothing thrown crosses it.
#include "sluice/sluice.h"

#include <exception>
#include <new>
#include <optional>
#include <string>

#include "sluice/loader.h"
#include "sluice/producer.h"

static_assert(SLUICE_U8 == static_cast<int>(sluice::DType::u8) && SLUICE_F32 == static_cast<int>(sluice::DType::f32) &&
              SLUICE_BOOL == static_cast<int>(sluice::DType::boolean),
              "sluice_dtype mirrors sluice::DType");

struct sluice_loader {
  sluice::Loader loader;
};

struct sluice_batch {
  sluice::Batch batch;
};

namespace {

thread_local std::string last_error;

template <typename Fn>
sluice_status guarded(Fn&& fn) {
  try {
    last_error.clear();
    return fn();
  } catch (const std::bad_alloc&) {
    last_error = "out of memory";
  } catch (const std::exception& e) {
    last_error = e.what();
  } catch (...) {
    last_error = "unknown error";
  }
  return SLUICE_ERROR;
}

sluice_status invalid(const std::string& message) {
  last_error = message;
  return SLUICE_INVALID_ARGUMENT;
}

// Calls a C fill function; its non-zero return becomes an exception that the
// worker reports to the consumer.
class CProducer final : public sluice::Producer {
 public:
  CProducer(sluice_fill_fn fn, void* user) : fn_(fn), user_(user) {}
  void fill(sluice::BatchContext& batch) override {
    void* data[sluice::max_fields];
    std::size_t bytes[sluice::max_fields];
    for (std::size_t f = 0; f < batch.field_count(); ++f) {
      data[f] = batch.data(f);
      bytes[f] = batch.sample_bytes(f);
    }
    sluice_fill c{batch.epoch(), batch.batch_index(), batch.worker_id(), batch.size(), batch.samples().data(),
                  batch.field_count(), data, bytes};
    char error[1024] = "";
    if (fn_(user_, &c, error, sizeof error) != 0) {
      throw std::runtime_error(error[0] ? error : "the C fill function returned an error");
    }
  }

 private:
  sluice_fill_fn fn_;
  void* user_;
};

}  // namespace

extern "C" {

void sluice_options_init(sluice_options* o) {
  *o = sluice_options{};
  sluice::Options d;
  o->batch_size = d.batch_size;
  o->epochs = d.epochs;
  o->world_size = d.world_size;
  o->workers = d.workers;
  o->ordered = d.ordered ? 1 : 0;
}

sluice_status sluice_loader_create(const sluice_options* o, sluice_loader** out) {
  if (!o || !out) return invalid("sluice_loader_create: options and out must not be NULL");
  if (!o->fill) return invalid("sluice_loader_create: options.fill is NULL");
  if (o->field_count > 0 && !o->fields) return invalid("sluice_loader_create: options.fields is NULL");
  if (o->field_count > sluice::max_fields) {
    return invalid("sluice_loader_create: at most " + std::to_string(sluice::max_fields) + " fields");
  }
  *out = nullptr;
  return guarded([&] {
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
        throw std::invalid_argument("field " + std::to_string(f) + " has no name or a bad shape");
      }
      opt.fields.push_back({s.name, static_cast<sluice::DType>(s.dtype), {s.shape, s.shape + s.ndim}});
    }
    opt.producer = std::make_shared<CProducer>(o->fill, o->user);
    *out = new sluice_loader{sluice::Loader(std::move(opt))};
    return SLUICE_OK;
  });
}

void sluice_loader_destroy(sluice_loader* loader) { delete loader; }

sluice_status sluice_loader_next(sluice_loader* loader, sluice_batch** out) {
  if (!loader || !out) return invalid("sluice_loader_next: loader and out must not be NULL");
  *out = nullptr;
  return guarded([&] {
    std::optional<sluice::Batch> b = loader->loader.next();
    if (!b) return SLUICE_END;
    *out = new sluice_batch{std::move(*b)};
    return SLUICE_OK;
  });
}

uint64_t sluice_batch_epoch(const sluice_batch* b) { return b->batch.epoch(); }
uint64_t sluice_batch_index(const sluice_batch* b) { return b->batch.index(); }
size_t sluice_batch_size(const sluice_batch* b) { return b->batch.size(); }
const uint64_t* sluice_batch_sample_ids(const sluice_batch* b) { return b->batch.sample_ids().data(); }
size_t sluice_batch_field_count(const sluice_batch* b) { return b->batch.field_count(); }

sluice_status sluice_batch_field(const sluice_batch* b, size_t i, sluice_field* out) {
  if (!b || !out) return invalid("sluice_batch_field: batch and out must not be NULL");
  if (i >= b->batch.field_count()) {
    return invalid("sluice_batch_field: index " + std::to_string(i) + " out of range");
  }
  return guarded([&] {
    sluice::FieldView v = b->batch.field(i);
    out->name = v.name.data();  // NUL-terminated inside the slot header
    out->dtype = static_cast<sluice_dtype>(v.dtype);
    out->ndim = static_cast<int>(v.shape.size());
    out->shape = v.shape.data();
    out->data = v.data;
    out->nbytes = v.nbytes;
    return SLUICE_OK;
  });
}

void sluice_batch_release(sluice_batch* b) { delete b; }

const char* sluice_last_error(void) { return last_error.c_str(); }

}  // extern "C"
