#include "py_loader.h"

#include <Python.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <chrono>
#include <unistd.h>
#include <utility>

#include "dataset_producer.h"
#include "sluice/error.h"
#include "sluice/io/batch_writer.h"
#include "sluice/plan.h"
#include "sluice/run_settings.h"
#include "sluice/script.h"
#include "sluice/settings.h"
#include "sluice/state.h"

namespace sluice::python {

namespace {

// How long one wait for a batch lasts before signals are checked again.
constexpr std::chrono::milliseconds kWaitSlice{50};

py::dict stats_dict(const sluice::Stats& s) {
  static py::handle loads = py::object(py::module_::import("json").attr("loads")).release();  // kept for good
  return loads(s.to_json());
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

// Python's side of a fork made while this thread holds the GIL: the import
// lock and the os.register_at_fork hooks, as os.fork has them. A Ctrl-C
// must not be lost there: the caller raises one already pending before it
// takes its mutex (a signal handler may use the loader); one that arrives
// during the fork would be taken by the hooks' Python code (logging's lock
// release) and reported as "ignored", and the run would go on, so
// sys.unraisablehook is ours meanwhile, and done() raises it again. (The
// zygote inherits the hook: its workers put Python's back, start_worker.)
class ForkGuard {
 public:
  ForkGuard() {
    sys_ = py::module_::import("sys");
    previous_ = sys_.attr("unraisablehook");
    sys_.attr("unraisablehook") = py::cpp_function([this](py::object info) {
      if (PyErr_GivenExceptionMatches(info.attr("exc_type").ptr(), PyExc_KeyboardInterrupt)) {
        interrupted_ = true;
        return;
      }
      previous_(info);
    });
    PyOS_BeforeFork();
  }
  ~ForkGuard() {
    try {
      restore();
    } catch (const py::error_already_set&) {  // never out of a destructor
    }
  }
  // After the fork: the Ctrl-C the hooks took, raised.
  void done() {
    restore();
    if (interrupted_) {
      PyErr_SetNone(PyExc_KeyboardInterrupt);
      throw py::error_already_set();
    }
  }
  ForkGuard(const ForkGuard&) = delete;
  ForkGuard& operator=(const ForkGuard&) = delete;

 private:
  void restore() {
    if (restored_) return;
    restored_ = true;
    PyOS_AfterFork_Parent();
    sys_.attr("unraisablehook") = previous_;
  }
  py::module_ sys_;
  py::object previous_;
  bool interrupted_ = false;
  bool restored_ = false;
};

// The batches of one epoch, for `for batch in loader`. Unlike a generator it
// survives an exception (KeyboardInterrupt, every slot held): iterating it
// again goes on where it stopped.
class EpochIterator {
 public:
  // shape: None, or a Python callable that turns each batch into what the
  // loop gets (tensors, arrays, the sample's containers). It runs here, not
  // in a Python __next__: Ctrl-C can be raised at any Python instruction, so
  // there it could land after the batch arrived and before anything could
  // give it back. Here it can only come out of `shape`, and the batch is
  // given back (take_back) before it propagates: the loop goes on with it.
  EpochIterator(py::object owner, std::uint64_t epoch, py::object shape = py::none())
      : owner_(std::move(owner)), epoch_(epoch), shape_(std::move(shape)) {}
  py::object next() {
    PyLoader& loader = owner_.cast<PyLoader&>();
    py::object batch = loader.next(epoch_);
    if (batch.is_none()) {
      done_ = true;
      throw py::stop_iteration();
    }
    if (shape_.is_none()) return batch;
    try {
      return shape_(batch);
    } catch (...) {
      loader.take_back();
      throw;
    }
  }
  std::uint64_t epoch() const { return epoch_; }
  bool done() const { return done_; }

 private:
  py::object owner_;  // the _Loader
  std::uint64_t epoch_;
  py::object shape_;
  bool done_ = false;
};

}  // namespace

py::dict options_info(const sluice::Options& o) {
  py::dict d;
  d["dataset_size"] = o.dataset_size;
  // Every setting the options hold, typed as Python passes it (4, True, "skip", "auto").
  for (const auto& [name, text] : sluice::RunSettings::values(o)) {
    const sluice::Setting* setting = sluice::find_setting(name);
    if (setting->kind == sluice::SettingKind::flag) {
      d[py::str(name)] = text == "true";
    } else if (setting->kind == sluice::SettingKind::count && text != "auto") {
      d[py::str(name)] = std::stoull(text);
    } else {
      d[py::str(name)] = text;
    }
  }
  py::list fields;
  for (const sluice::FieldSpec& f : o.fields) {
    fields.append(py::make_tuple(f.name, std::string(sluice::dtype_name(f.dtype)), py::tuple(py::cast(f.shape))));
  }
  d["fields"] = fields;
  return d;
}

// What a script's remote objects took (sluice::ScriptRemoteStats).
static py::dict remote_dict(const sluice::ScriptRemoteStats& r) {
  using R = sluice::ScriptRemoteStats;
  static const std::pair<const char*, std::uint64_t R::*> fields[] = {
      {"objects", &R::objects},         {"cache_hits", &R::hits},
      {"cache_misses", &R::misses},     {"evictions", &R::evictions},
      {"requests", &R::requests},       {"retries", &R::retries},
      {"bytes_downloaded", &R::bytes},  {"network_wait_ns", &R::wait_ns},
      {"revalidated", &R::revalidated}, {"changed", &R::changed},
      {"worker_shards", &R::worker_shards}, {"worker_wait_ns", &R::worker_wait_ns},
  };
  py::dict remote;
  for (const auto& [name, field] : fields) remote[name] = r.*field;
  return remote;
}

PyLoader::PyLoader(LoaderSource source, std::string record)
    : source_(std::move(source)), record_path_(std::move(record)), owner_pid_(getpid()),
      owner_generation_(sluice::fork_generation()) {}

std::unique_ptr<PyLoader> PyLoader::from_script(const std::string& path,
                                                const std::vector<std::pair<std::string, std::string>>& settings,
                                                std::string record) {
  sluice::RunSettings run(path);
  for (const auto& [name, value] : settings) run.set(name, value);
  sluice::Script script;
  {
    py::gil_scoped_release nogil;
    script = run.load();
  }
  LoaderSource source;
  source.script = run.script_options();
  source.info = options_info(script.options);
  py::dict& d = source.info;
  d["path"] = script.path;
  d["device"] = script.device;
  d["notes"] = script.notes;
  d["left_out"] = script.left_out;
  if (script.remote.objects > 0) {
    d["remote"] = remote_dict(script.remote);
    source.remote_stats = [script] { return script.remote_stats(); };
  }
  source.options = script.options;
  source.record_header = [script] { return sluice::record_header(script); };
  return std::make_unique<PyLoader>(std::move(source), std::move(record));
}

void PyLoader::start(const std::optional<std::string>& resume_json, bool same_run) {
  check_process();
  if (PyErr_CheckSignals() != 0) throw py::error_already_set();  // before the mutex: a handler may use the loader
  Exclusive one(mutex_);
  // The same run going on (a loop left early restarts the workers at the
  // next epoch): its record too. Else a record starts afresh.
  std::unique_ptr<sluice::RunRecorder> kept;
  if (same_run && recorder_) {
    if (loader_) skips_->update(loader_->stats());
    skips_.reset();
    kept = std::move(recorder_);
  }
  close_locked();
  recorder_ = std::move(kept);  // kept also if what follows fails: a retry goes on with it
  sluice::Options options = source_.options;
  if (options.slots == 1) {
    // `for batch in loader` holds the last batch while it asks for the next.
    throw Error("prefetch = 1 leaves no slot to fill while a loop holds its batch (`for batch in loader` keeps "
                "it until next() returns): use 2 or more, or 0 for the default");
  }
  if (resume_json) options.resume = sluice::LoaderState::from_json(*resume_json);
  if (!record_path_.empty()) {
    if (!recorder_) recorder_ = std::make_unique<sluice::RunRecorder>(record_path_, source_.record_header());
    skips_ = std::make_unique<sluice::SkipReport>("", recorder_.get());
  }
  if (source_.python_workers) {
    // The zygote is forked in here: it, and every worker forked from it, gets
    // an interpreter whose GIL this thread holds (dataset_producer.h).
    ForkGuard fork;
    loader_ = std::make_unique<sluice::Loader>(std::move(options));
    fork.done();
    return;
  }
  py::gil_scoped_release nogil;
  loader_ = std::make_unique<sluice::Loader>(std::move(options));
}

py::tuple PyLoader::write(const std::string& dir, const std::string& format, std::uint64_t shard_samples,
                          std::uint64_t shard_bytes, const std::string& staging) {
  check_process();
  sluice::Options options = source_.options;
  {
    Exclusive one(mutex_);
    if (loader_) throw Error("sluice.write takes a loader that has not started (no batch taken, no state_dict())");
  }
  // The plan in the manifest: a resume with other settings (or another pipeline.lua) is refused.
  const std::string script_hash = source_.record_header ? source_.record_header().script_hash : "";
  io::BatchWriter writer(options.fields, {.dir = dir, .format = format, .shard_samples = shard_samples,
                                          .shard_bytes = shard_bytes, .fields = {}, .staging = staging,
                                          .plan = io::write_plan(options, script_hash),
                                          .remote_retries = source_.script.remote_retries,
                                          .remote_timeout_ms = source_.script.remote_timeout_ms,
                                          .cache_dir = source_.script.cache_dir.value_or("")});
  for (const std::string& note : writer.shards().notes())
    if (PyErr_WarnEx(PyExc_UserWarning, note.c_str(), 1) != 0) throw py::error_already_set();
  if (writer.shards().already_complete()) return py::make_tuple(writer.shards().manifest().to_json(), py::list());
  writer.prepare(options);
  std::unique_ptr<sluice::Loader> loader;
  if (source_.python_workers) {
    if (PyErr_CheckSignals() != 0) throw py::error_already_set();
    ForkGuard fork;  // as in start(): the workers' interpreters come from this one, GIL held
    loader = std::make_unique<sluice::Loader>(std::move(options));
    try {
      fork.done();
    } catch (...) {
      py::gil_scoped_release nogil;  // the workers stop without the GIL, as Stop below does
      loader.reset();
      throw;
    }
  } else {
    py::gil_scoped_release nogil;
    loader = std::make_unique<sluice::Loader>(std::move(options));
  }
  struct Stop {  // the workers stop without the GIL, on every path
    std::unique_ptr<sluice::Loader>& loader;
    ~Stop() {
      py::gil_scoped_release nogil;
      loader.reset();
    }
  } stop{loader};
  for (;;) {
    bool more = false;
    {
      py::gil_scoped_release nogil;
      if (std::optional<sluice::Batch> batch = loader->next()) {
        writer.write(*batch);
        more = true;
      }
    }
    if (PyErr_CheckSignals() != 0) throw py::error_already_set();
    if (!more) break;
  }
  const std::string manifest = writer.finish().to_json();
  // The samples on_error = "skip" left out of the shards: (id, reason) each,
  // by id (the stats have them in the order the workers dropped them).
  const sluice::Stats stats = loader->stats();
  std::vector<std::pair<std::uint64_t, std::string>> dropped;
  for (std::size_t i = 0; i < stats.skipped_samples.size(); ++i)
    dropped.emplace_back(stats.skipped_samples[i], i < stats.skip_reasons.size() ? stats.skip_reasons[i] : "");
  std::sort(dropped.begin(), dropped.end());
  py::list skipped;
  for (const auto& [id, reason] : dropped) skipped.append(py::make_tuple(id, reason));
  return py::make_tuple(manifest, skipped);
}

bool PyLoader::started() {
  check_process();
  Exclusive one(mutex_);
  return loader_ != nullptr;
}

// Bounded to `epoch`, so the next epoch's first batch stays in the loader
// (and out of state_json()) until it is asked for. The mutex is held only
// around the loader's own calls and the run record, never while Python code
// may run (a signal handler at PyErr_CheckSignals, a __del__ while the batch
// becomes Python objects): such code may call state_dict() or close(). The
// GIL is released while the loader works, which may include re-forking a worker.
py::object PyLoader::next(std::uint64_t epoch) {
  check_process();
  left_by_exception_ = true;  // until it returns: an exception leaves it set
  for (;;) {
    std::optional<sluice::Batch> batch;
    {
      Exclusive one(mutex_);
      sluice::Loader& l = loader();
      returned_.reset();
      batch = std::exchange(pending_, std::nullopt);
      try {
        if (!batch) {
          pending_recorded_ = false;
          py::gil_scoped_release nogil;
          batch = l.next_for(kWaitSlice, epoch);
        }
        if (!batch && (l.finished() || l.current_epoch() > epoch)) {
          // The run's end closes its record; an epoch's end (the next loop
          // goes on recording) puts what it holds onto the file.
          if (l.finished()) finish_record();
          else if (recorder_) recorder_->flush();
          left_by_exception_ = false;
          return py::none();
        }
      } catch (const sluice::Error&) {
        if (skips_) skips_->update(l.stats());  // what was skipped before the failure, as `sluice run` does
        throw;
      }
      // Recording may fail (a full disk): the batch is then kept for the
      // next call, and state_json() does not count it meanwhile.
      if (batch && recorder_ && !pending_recorded_) {
        try {
          recorder_->record(*batch);
          skips_->update(l.stats());
        } catch (...) {
          pending_ = std::move(batch);
          throw;
        }
      }
    }
    if (batch) {
      // Until the loop has it, a state_dict() (a signal handler, run by the
      // check below or by Python code that deliver() runs) counts the batch
      // as not delivered: saved there, then leaving, it is resumed, not lost.
      {
        Exclusive one(mutex_);
        delivering_ = batch->share();
      }
      try {
        py::object delivered = deliver(batch->share());
        // A Ctrl-C that came while the loader waited: raised here, with the
        // batch kept, not in the loop's body, which would have had it.
        if (PyErr_CheckSignals() != 0) throw py::error_already_set();
        {
          Exclusive one(mutex_);
          delivering_.reset();
          returned_ = batch->share();
        }
        left_by_exception_ = false;
        return delivered;
      } catch (...) {
        Exclusive one(mutex_);
        delivering_.reset();
        pending_ = std::move(batch);
        pending_recorded_ = true;
        throw;
      }
    }
    if (PyErr_CheckSignals() != 0) throw py::error_already_set();
  }
}

py::object PyLoader::deliver(sluice::Batch batch) const {
  PyBatch b(std::move(batch));
  if (source_.delivery == Delivery::batch) return py::cast(std::move(b));
  std::int64_t rows = -1;
  if (source_.rows) {
    const std::optional<std::size_t> at = b.find(kRowsField);
    if (!at) throw Error("sluice: a sequence's batch without its " + std::string(kRowsField) + " field");
    rows = *static_cast<const std::int64_t*>(b.get().field(*at).data);
  }
  py::list arrays;
  py::dict named;
  for (std::size_t i = 0; i < b.get().field_count(); ++i) {
    if (source_.rows && b.get().field(i).name == kRowsField) continue;
    Array a = b.array(i);
    if (source_.rows) a = a.first_row(rows);
    py::object o = py::cast(a);
    arrays.append(o);
    named[py::str(a.name())] = o;
  }
  switch (source_.delivery) {
    case Delivery::dict: return named;
    case Delivery::tuple: return py::tuple(arrays);
    case Delivery::single: return arrays[0];
    case Delivery::batch: break;
  }
  return py::none();
}

void PyLoader::take_back() {
  check_process();
  Exclusive one(mutex_);
  left_by_exception_ = true;  // the loop was left by the loader: the next one goes on
  if (!returned_ || pending_) return;
  pending_ = std::exchange(returned_, std::nullopt);
  pending_recorded_ = true;  // recorded when it was taken
}

std::string PyLoader::state_json() {
  check_process();
  Exclusive one(mutex_);
  const std::optional<sluice::Batch>& held = pending_ ? pending_ : delivering_;  // not the loop's yet
  return (held ? loader().state_without(*held) : loader().state()).to_json();
}

std::uint64_t PyLoader::current_epoch() {
  check_process();
  Exclusive one(mutex_);
  // A batch kept for the next call (Ctrl-C, a failed record) is the next one
  // delivered: its epoch is the one a loop that goes on is in, though the
  // loader has moved past it when it was its epoch's last.
  if (pending_) return pending_->epoch();
  if (delivering_) return delivering_->epoch();
  return loader().current_epoch();
}

bool PyLoader::finished() {
  check_process();
  Exclusive one(mutex_);
  return loader().finished();
}

py::dict PyLoader::stats() {
  check_process();
  Exclusive one(mutex_);
  py::dict d = stats_dict(loader().stats());
  // The downloads at load, and the workers' so far.
  if (source_.remote_stats) d["remote"] = remote_dict(source_.remote_stats());
  return d;
}

std::uint32_t PyLoader::slots() {
  check_process();
  Exclusive one(mutex_);
  return loader().slots();
}

std::vector<int> PyLoader::worker_pids() {
  check_process();
  Exclusive one(mutex_);
  return loader().worker_pids();
}

py::tuple PyLoader::memory() {
  check_process();
  Exclusive one(mutex_);
  const std::span<std::byte> m = loader().memory();
  return py::make_tuple(reinterpret_cast<std::uintptr_t>(m.data()), m.size());
}

std::uint64_t PyLoader::batches_per_epoch() const {
  return sluice::EpochPlan(source_.options).batches_per_epoch();
}

void PyLoader::close() {
  if (sluice::fork_generation() != owner_generation_) return;  // a forked child's copy: the workers and the record are the parent's
  Exclusive one(mutex_);
  close_locked();
}

void PyLoader::check_process() const {
  if (sluice::fork_generation() == owner_generation_) return;
  throw Error("this Loader belongs to process " + std::to_string(owner_pid_) + ", and process " +
              std::to_string(getpid()) + " is a fork of it (one of its workers, os.fork, multiprocessing with "
              "fork): a Loader cannot be used from a forked process; make one there instead");
}

void PyLoader::close_locked() {
  pending_.reset();
  delivering_.reset();
  returned_.reset();
  finish_record();
  std::unique_ptr<sluice::Loader> loader = std::move(loader_);
  py::gil_scoped_release nogil;
  loader.reset();
}

PyLoader* PyLoader::of(PyObject* self) {
  // During the GC the instance may not be built yet (or any more): no holder, no value.
  auto* inst = reinterpret_cast<py::detail::instance*>(self);
  py::detail::value_and_holder v = inst->get_value_and_holder();
  return v.holder_constructed() ? v.template holder<std::unique_ptr<PyLoader>>().get() : nullptr;
}

void PyLoader::drop_kept() {
  // The GC breaks the cycle here: the workers stop first, as they use what is kept.
  if (sluice::fork_generation() == owner_generation_ && mutex_.try_lock()) {
    close_locked();
    mutex_.unlock();
  }
  source_.keep = py::none();
}

sluice::Loader& PyLoader::loader() const {
  if (!loader_) throw Error("the loader has been closed");
  return *loader_;
}

void PyLoader::finish_record() {
  if (!recorder_) return;
  if (loader_) skips_->update(loader_->stats());
  skips_.reset();
  std::unique_ptr<sluice::RunRecorder> recorder = std::move(recorder_);
  recorder->close();
}

void bind_loader(py::module_& m) {
  py::class_<EpochIterator>(m, "EpochIterator", "The batches of one epoch")
      .def("__iter__", [](py::object self) { return self; })
      .def("__next__", &EpochIterator::next)
      .def_property_readonly("epoch", &EpochIterator::epoch)
      .def_property_readonly("done", &EpochIterator::done);

  // Collectable: a dataset that refers to its Loader (self.loader = ...)
  // makes a cycle through source_.keep, which the GC sees only if _Loader
  // reports it; unseen, the workers would live until the interpreter exits.
  py::class_<PyLoader>(m, "_Loader", py::custom_type_setup([](PyHeapTypeObject* heap_type) {
                         auto* type = &heap_type->ht_type;
                         type->tp_flags |= Py_TPFLAGS_HAVE_GC;
                         type->tp_traverse = [](PyObject* self, visitproc visit, void* arg) -> int {
                           Py_VISIT(Py_TYPE(self));
                           if (PyLoader* l = PyLoader::of(self)) Py_VISIT(l->kept().ptr());
                           return 0;
                         };
                         type->tp_clear = [](PyObject* self) -> int {
                           if (PyLoader* l = PyLoader::of(self)) l->drop_kept();
                           return 0;
                         };
                       }))
      .def(py::init(&PyLoader::from_script), py::arg("path"), py::arg("settings"), py::arg("record"))
      .def("start", &PyLoader::start, py::arg("resume_json") = py::none(), py::arg("same_run") = false)
      .def("started", &PyLoader::started)
      .def("next", &PyLoader::next, py::arg("epoch"))
      .def("shaped_iter", [](py::object self, py::object shape) {
        return EpochIterator(self, self.cast<PyLoader&>().current_epoch(), std::move(shape));
      })
      .def("epoch_iter", [](py::object self) {
        return EpochIterator(self, self.cast<PyLoader&>().current_epoch());
      })
      .def("state_json", &PyLoader::state_json)
      .def("write", &PyLoader::write, py::arg("dir"), py::arg("format"), py::arg("shard_samples"),
           py::arg("shard_bytes"), py::arg("staging"))
      .def("current_epoch", &PyLoader::current_epoch)
      .def("finished", &PyLoader::finished)
      .def("left_by_exception", [](const PyLoader& l) { return l.left_by_exception(); })
      .def("stats", &PyLoader::stats)
      .def("slots", &PyLoader::slots)
      .def("worker_pids", &PyLoader::worker_pids)
      .def("memory", &PyLoader::memory)
      .def("batches_per_epoch", &PyLoader::batches_per_epoch)
      .def("info", &PyLoader::info)
      .def("close", &PyLoader::close);
}

}  // namespace sluice::python
