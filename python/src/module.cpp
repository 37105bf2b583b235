// sluice._sluice: the C++ side of the Python package (python/sluice/).
//
// _Loader  a pipeline.lua loaded through sluice::RunSettings, and the
//          sluice::Loader that runs it (created by start(), so that a resume
//          state can be given first). next() waits for a batch in 50 ms
//          slices with the GIL released, checking for signals between them:
//          Ctrl-C raises KeyboardInterrupt at once.
// Batch    one delivered batch: field name -> Array, epoch, index, sample ids.
// Array    one field of a batch, exported through the DLPack protocol
//          (__dlpack__ / __dlpack_device__) with no copy: torch.from_dlpack
//          and numpy.from_dlpack adopt the slot's memory. An Array, and every
//          tensor made from it, keeps the slot alive; the slot returns to the
//          loader when the last of them (and the Batch) is gone.
//
// Every C++ exception becomes sluice.Error with the runtime's message (the
// same text `sluice run` prints after "error: ").
#include <Python.h>
#include <dlpack/dlpack.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sluice/batch.h"
#include "sluice/error.h"
#include "sluice/loader.h"
#include "sluice/plan.h"
#include "sluice/record.h"
#include "sluice/run_report.h"
#include "sluice/run_settings.h"
#include "sluice/script.h"
#include "sluice/state.h"

namespace py = pybind11;

namespace {

// How long one wait for a batch lasts before signals are checked again.
constexpr std::chrono::milliseconds kWaitSlice{50};
constexpr const char* kCapsuleName = "dltensor";

// The DLManagedTensor Batch::to_dlpack made for one Array: it holds a lease on
// the slot until the last Array and exported tensor sharing it are gone.
struct TensorOwner {
  explicit TensorOwner(DLManagedTensor* t) : tensor(t) {}
  ~TensorOwner() {
    if (tensor && tensor->deleter) tensor->deleter(tensor);
  }
  TensorOwner(const TensorOwner&) = delete;
  TensorOwner& operator=(const TensorOwner&) = delete;
  DLManagedTensor* tensor;
};

// A capsule no consumer took (its name is still "dltensor") frees its tensor.
void capsule_destructor(PyObject* capsule) {
  if (!PyCapsule_IsValid(capsule, kCapsuleName)) return;  // renamed "used_dltensor": the consumer owns it
  auto* t = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, kCapsuleName));
  if (t && t->deleter) t->deleter(t);
}

class Array {
 public:
  Array(std::shared_ptr<TensorOwner> owner, std::string name, std::string dtype)
      : owner_(std::move(owner)), name_(std::move(name)), dtype_(std::move(dtype)) {}

  // A fresh DLManagedTensor over the same memory per call (a consumer owns
  // and frees what it takes), each holding the owner.
  py::object dlpack(const py::object& stream, const py::object& max_version, const py::object& dl_device,
                    const py::object& copy) const {
    (void)stream;  // host memory: there is no stream to synchronize with
    (void)max_version;  // DLPack 0.6: an unversioned "dltensor" capsule, which the protocol allows
    if (!copy.is_none() && copy.cast<bool>()) {
      throw sluice::Error("sluice arrays are exported without a copy (__dlpack__(copy=True) asked for one)");
    }
    if (!dl_device.is_none()) {
      std::pair<int, int> device;
      try {
        device = dl_device.cast<std::pair<int, int>>();
      } catch (const py::cast_error&) {
        throw sluice::Error("__dlpack__(dl_device=...) expects a (device_type, device_id) pair of ints, got " +
                            py::repr(dl_device).cast<std::string>());
      }
      if (device.first != kDLCPU) {
        throw sluice::Error("this build of sluice delivers batches in host memory (kDLCPU), not device type " +
                            std::to_string(device.first));
      }
    }
    auto* t = new DLManagedTensor{};
    t->dl_tensor = owner_->tensor->dl_tensor;
    t->manager_ctx = new std::shared_ptr<TensorOwner>(owner_);
    t->deleter = [](DLManagedTensor* self) {
      delete static_cast<std::shared_ptr<TensorOwner>*>(self->manager_ctx);
      delete self;
    };
    PyObject* capsule = PyCapsule_New(t, kCapsuleName, capsule_destructor);
    if (!capsule) {
      t->deleter(t);
      throw py::error_already_set();
    }
    return py::reinterpret_steal<py::object>(capsule);
  }

  const DLTensor& tensor() const { return owner_->tensor->dl_tensor; }
  py::tuple shape() const {
    py::tuple shape(tensor().ndim);
    for (int d = 0; d < tensor().ndim; ++d) shape[d] = tensor().shape[d];
    return shape;
  }
  std::size_t nbytes() const {
    std::size_t n = (tensor().dtype.bits * tensor().dtype.lanes + 7) / 8;
    for (int d = 0; d < tensor().ndim; ++d) n *= static_cast<std::size_t>(tensor().shape[d]);
    return n;
  }
  const std::string& name() const { return name_; }
  const std::string& dtype() const { return dtype_; }
  std::uintptr_t data_ptr() const { return reinterpret_cast<std::uintptr_t>(tensor().data); }

 private:
  std::shared_ptr<TensorOwner> owner_;
  std::string name_;
  std::string dtype_;
};

class PyBatch {
 public:
  explicit PyBatch(sluice::Batch batch) : batch_(std::move(batch)) {}

  const sluice::Batch& get() const {
    if (!batch_) throw sluice::Error("this batch has been released (arrays and tensors made from it stay valid)");
    return batch_;
  }
  Array array(std::size_t i) const {
    const sluice::Batch& b = get();
    const sluice::FieldView v = b.field(i);
    return Array(std::make_shared<TensorOwner>(b.to_dlpack(i)), std::string(v.name),
                 std::string(sluice::dtype_name(v.dtype)));
  }
  std::optional<std::size_t> find(std::string_view name) const {
    const sluice::Batch& b = get();
    for (std::size_t i = 0; i < b.field_count(); ++i) {
      if (b.field(i).name == name) return i;
    }
    return std::nullopt;
  }
  Array item(std::string_view name) const {
    if (std::optional<std::size_t> i = find(name)) return array(*i);
    std::string names;
    for (const std::string& key : keys()) names += (names.empty() ? "" : ", ") + key;
    throw sluice::Error("the batch has no field '" + std::string(name) + "'; its fields are " + names);
  }
  std::vector<std::string> keys() const {
    const sluice::Batch& b = get();
    std::vector<std::string> names;
    for (std::size_t i = 0; i < b.field_count(); ++i) names.emplace_back(b.field(i).name);
    return names;
  }
  py::list items() const {
    py::list out;
    for (std::size_t i = 0; i < get().field_count(); ++i) out.append(py::make_tuple(keys()[i], array(i)));
    return out;
  }
  py::array_t<std::uint64_t> sample_ids() const {
    const std::span<const std::uint64_t> ids = get().sample_ids();
    return py::array_t<std::uint64_t>(static_cast<py::ssize_t>(ids.size()), ids.data());
  }
  void release() { batch_.release(); }
  bool released() const { return !batch_; }

 private:
  sluice::Batch batch_;
};

py::dict stats_dict(const sluice::Stats& s) {
  py::dict d;
  d["batches_delivered"] = s.batches_delivered;
  d["samples_delivered"] = s.samples_delivered;
  d["bytes_delivered"] = s.bytes_delivered;
  d["consumer_wait_ns"] = s.consumer_wait_ns;
  d["consumer_waits"] = s.consumer_waits;
  d["max_in_flight"] = s.max_in_flight;
  d["first_batch_ns"] = s.first_batch_ns;
  d["slots_full_ns"] = s.slots_full_ns;
  d["worker_fill_ns"] = s.worker_fill_ns;
  d["worker_idle_ns"] = s.worker_idle_ns;
  d["worker_restarts"] = s.worker_restarts;
  d["batches_retried"] = s.batches_retried;
  d["skipped_samples"] = s.skipped_samples;
  d["skip_reasons"] = s.skip_reasons;
  d["empty_batches"] = s.empty_batches;
  return d;
}

// One thread at a time inside a Loader (sluice::Loader's rule): next()
// releases the GIL while it waits, so another Python thread may call in
// meanwhile (stats() from a monitor, say). It waits for the mutex without the
// GIL, so the thread in next() can take the GIL back and finish.
class Exclusive {
 public:
  explicit Exclusive(std::mutex& mutex) : lock_(mutex, std::defer_lock) {
    if (lock_.try_lock()) return;
    py::gil_scoped_release nogil;
    lock_.lock();
  }

 private:
  std::unique_lock<std::mutex> lock_;
};

class PyLoader {
 public:
  // settings: (name, value) pairs with RunSettings' names; record: a run
  // record's path, or "".
  PyLoader(const std::string& path, const std::vector<std::pair<std::string, std::string>>& settings,
           std::string record)
      : record_path_(std::move(record)) {
    sluice::RunSettings run(path);
    for (const auto& [name, value] : settings) run.set(name, value);
    py::gil_scoped_release nogil;
    script_ = run.load();
  }

  // (Re)creates the Loader, from the first batch or from a state's JSON.
  void start(const std::optional<std::string>& resume_json) {
    Exclusive one(mutex_);
    close_locked();
    sluice::Options options = script_.options;
    if (resume_json) options.resume = sluice::LoaderState::from_json(*resume_json);
    if (!record_path_.empty()) {
      recorder_ = std::make_unique<sluice::RunRecorder>(record_path_, sluice::record_header(script_));
      skips_ = std::make_unique<sluice::SkipReport>("", recorder_.get());
    }
    py::gil_scoped_release nogil;
    loader_ = std::make_unique<sluice::Loader>(std::move(options));
  }

  bool started() {
    Exclusive one(mutex_);
    return loader_ != nullptr;
  }

  // The next batch of `epoch`, or None when the epoch (or the run) is over.
  // Bounded to `epoch`, so the next epoch's first batch stays in the loader
  // (and out of state_json()) until it is asked for.
  py::object next(std::uint64_t epoch) {
    Exclusive one(mutex_);
    sluice::Loader& l = loader();
    std::optional<sluice::Batch> batch;
    try {
      for (;;) {
        // Holding the GIL first: the hot path is a few atomics.
        batch = l.next_for(std::chrono::milliseconds(0), epoch);
        if (!batch) {
          py::gil_scoped_release nogil;
          batch = l.next_for(kWaitSlice, epoch);
        }
        if (batch) break;
        if (l.finished() || l.current_epoch() > epoch) {
          finish_record();
          return py::none();
        }
        if (PyErr_CheckSignals() != 0) throw py::error_already_set();
      }
      if (recorder_) {
        recorder_->record(*batch);
        skips_->update(l.stats());
      }
    } catch (const sluice::Error&) {
      if (skips_) skips_->update(l.stats());  // what was skipped before the failure, as `sluice run` does
      throw;
    }
    return py::cast(PyBatch(std::move(*batch)));
  }

  std::string state_json() {
    Exclusive one(mutex_);
    return loader().state().to_json();
  }
  std::uint64_t current_epoch() {
    Exclusive one(mutex_);
    return loader().current_epoch();
  }
  bool finished() {
    Exclusive one(mutex_);
    return loader().finished();
  }
  py::dict stats() {
    Exclusive one(mutex_);
    return stats_dict(loader().stats());
  }
  std::uint32_t slots() {
    Exclusive one(mutex_);
    return loader().slots();
  }
  std::vector<int> worker_pids() {
    Exclusive one(mutex_);
    return loader().worker_pids();
  }
  py::tuple memory() {
    Exclusive one(mutex_);
    const std::span<std::byte> m = loader().memory();
    return py::make_tuple(reinterpret_cast<std::uintptr_t>(m.data()), m.size());
  }
  std::uint64_t batches_per_epoch() const { return sluice::EpochPlan(script_.options).batches_per_epoch(); }

  py::dict info() const {
    const sluice::Options& o = script_.options;
    py::dict d;
    d["path"] = script_.path;
    d["device"] = script_.device;
    d["dataset_size"] = o.dataset_size;
    d["batch_size"] = o.batch_size;
    d["epochs"] = o.epochs;
    d["workers"] = o.workers;
    d["seed"] = o.seed;
    d["shuffle"] = o.shuffle;
    d["drop_last"] = o.drop_last;
    d["rank"] = o.rank;
    d["world_size"] = o.world_size;
    d["held_timeout_ms"] = o.held_timeout_ms;
    py::list fields;
    for (const sluice::FieldSpec& f : o.fields) {
      fields.append(py::make_tuple(f.name, std::string(sluice::dtype_name(f.dtype)), py::tuple(py::cast(f.shape))));
    }
    d["fields"] = fields;
    d["notes"] = script_.notes;
    return d;
  }

  // Stops the workers (the arena lives on while batches or tensors hold it)
  // and completes the run record.
  void close() {
    Exclusive one(mutex_);
    close_locked();
  }

 private:
  void close_locked() {
    finish_record();
    std::unique_ptr<sluice::Loader> loader = std::move(loader_);
    py::gil_scoped_release nogil;
    loader.reset();
  }
  sluice::Loader& loader() const {
    if (!loader_) throw sluice::Error("the loader has been closed");
    return *loader_;
  }
  void finish_record() {
    if (!recorder_) return;
    if (loader_) skips_->update(loader_->stats());
    skips_.reset();
    std::unique_ptr<sluice::RunRecorder> recorder = std::move(recorder_);
    recorder->close();
  }

  std::string record_path_;
  sluice::Script script_;
  std::unique_ptr<sluice::Loader> loader_;
  std::unique_ptr<sluice::RunRecorder> recorder_;
  std::unique_ptr<sluice::SkipReport> skips_;
  std::mutex mutex_;
};

// The batches of one epoch, for `for batch in loader`. Unlike a generator it
// survives an exception (KeyboardInterrupt, every slot held): iterating it
// again goes on where it stopped.
class EpochIterator {
 public:
  EpochIterator(py::object owner, std::uint64_t epoch) : owner_(std::move(owner)), epoch_(epoch) {}
  py::object next() {
    py::object batch = owner_.cast<PyLoader&>().next(epoch_);
    if (batch.is_none()) throw py::stop_iteration();
    return batch;
  }
  std::uint64_t epoch() const { return epoch_; }

 private:
  py::object owner_;  // the _Loader
  std::uint64_t epoch_;
};

}  // namespace

PYBIND11_MODULE(_sluice, m) {
  m.doc() = "Sluice's C++ runtime; use the sluice package, not this module";

  static py::handle error_type = py::exception<sluice::Error>(m, "Error", PyExc_Exception).release();
  error_type.attr("__module__") = "sluice";
  // Anything else C++ throws is a sluice.Error too; Python's own errors
  // (KeyboardInterrupt from PyErr_CheckSignals, argument errors) pass through.
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const py::error_already_set&) {
      throw;
    } catch (const py::builtin_exception&) {
      throw;
    } catch (const std::exception& e) {
      PyErr_SetString(error_type.ptr(), e.what());
    }
  });

  py::class_<Array>(m, "Array", "One field of a batch: a zero-copy DLPack exporter (torch.from_dlpack, numpy.from_dlpack)")
      .def("__dlpack__", &Array::dlpack, py::kw_only(), py::arg("stream") = py::none(),
           py::arg("max_version") = py::none(), py::arg("dl_device") = py::none(), py::arg("copy") = py::none())
      .def("__dlpack_device__", [](const Array&) { return py::make_tuple(static_cast<int>(kDLCPU), 0); })
      .def_property_readonly("name", &Array::name)
      .def_property_readonly("dtype", &Array::dtype)
      .def_property_readonly("shape", &Array::shape)
      .def_property_readonly("nbytes", &Array::nbytes)
      .def_property_readonly("data_ptr", &Array::data_ptr)
      .def("__len__", [](const Array& a) { return a.tensor().ndim ? a.tensor().shape[0] : 0; })
      .def("__repr__", [](const Array& a) {
        return "<sluice.Array " + a.name() + " " + a.dtype() + py::str(a.shape()).cast<std::string>() + ">";
      });

  py::class_<PyBatch>(m, "Batch", "A delivered batch: field name -> Array; holds its slot until released")
      .def("__getitem__", &PyBatch::item)
      .def("__contains__", [](const PyBatch& b, std::string_view name) { return b.find(name).has_value(); })
      .def("get", [](const PyBatch& b, std::string_view name, py::object fallback) -> py::object {
             if (std::optional<std::size_t> i = b.find(name)) return py::cast(b.array(*i));
             return fallback;
           }, py::arg("name"), py::arg("default") = py::none())
      .def("keys", &PyBatch::keys)
      .def("items", &PyBatch::items)
      .def("values", [](const PyBatch& b) {
        py::list out;
        for (std::size_t i = 0; i < b.get().field_count(); ++i) out.append(b.array(i));
        return out;
      })
      .def("__iter__", [](const PyBatch& b) { return py::iter(py::cast(b.keys())); })
      .def("__len__", [](const PyBatch& b) { return b.get().size(); })
      .def_property_readonly("epoch", [](const PyBatch& b) { return b.get().epoch(); })
      .def_property_readonly("index", [](const PyBatch& b) { return b.get().index(); })
      .def_property_readonly("sample_ids", &PyBatch::sample_ids)
      .def_property_readonly("released", &PyBatch::released)
      .def("release", &PyBatch::release)
      .def("__enter__", [](py::object self) { return self; })
      .def("__exit__", [](PyBatch& b, py::args) { b.release(); })
      .def("__repr__", [](const PyBatch& b) {
        if (b.released()) return std::string("<sluice.Batch (released)>");
        return "<sluice.Batch epoch " + std::to_string(b.get().epoch()) + " index " + std::to_string(b.get().index()) +
               ", " + std::to_string(b.get().size()) + " samples>";
      });

  py::class_<EpochIterator>(m, "EpochIterator", "The batches of one epoch")
      .def("__iter__", [](py::object self) { return self; })
      .def("__next__", &EpochIterator::next)
      .def_property_readonly("epoch", &EpochIterator::epoch);

  py::class_<PyLoader>(m, "_Loader")
      .def(py::init<const std::string&, const std::vector<std::pair<std::string, std::string>>&, std::string>(),
           py::arg("path"), py::arg("settings"), py::arg("record"))
      .def("start", &PyLoader::start, py::arg("resume_json") = py::none())
      .def("started", &PyLoader::started)
      .def("next", &PyLoader::next, py::arg("epoch"))
      .def("epoch_iter", [](py::object self) {
        return EpochIterator(self, self.cast<PyLoader&>().current_epoch());
      })
      .def("state_json", &PyLoader::state_json)
      .def("current_epoch", &PyLoader::current_epoch)
      .def("finished", &PyLoader::finished)
      .def("stats", &PyLoader::stats)
      .def("slots", &PyLoader::slots)
      .def("worker_pids", &PyLoader::worker_pids)
      .def("memory", &PyLoader::memory)
      .def("batches_per_epoch", &PyLoader::batches_per_epoch)
      .def("info", &PyLoader::info)
      .def("close", &PyLoader::close);

  m.def("check_state", [](const std::string& json) { (void)sluice::LoaderState::from_json(json); },
        "Raises sluice.Error if json is not a loader state");
  m.def("merge_states", [](const std::vector<std::string>& jsons) {
        std::vector<sluice::LoaderState> states;
        for (const std::string& json : jsons) states.push_back(sluice::LoaderState::from_json(json));
        std::string note;
        const sluice::LoaderState merged = sluice::LoaderState::merge(states, &note);
        return py::make_tuple(merged.to_json(), note);
      }, "The global position of every rank's state (JSON) and a note on where it resumes; sluice.Error if they disagree");
}
