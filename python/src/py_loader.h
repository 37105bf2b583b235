// py_loader.h: sluice._Loader, a sluice::Loader driven from Python.
//
// One class for every form of sluice.Loader: a pipeline.lua (loaded through
// sluice::RunSettings) and a Python dataset, sequence or fill function
// (a DatasetProducer, see dataset_producer.h). The Loader itself is created by
// start(), so that a resume state can be given first. next() waits for a batch
// in 50 ms slices with the GIL released, checking for signals between them
// without holding its lock: Ctrl-C raises KeyboardInterrupt at once, and a
// SIGTERM handler may save state_dict(). Every method but close() raises in
// a forked child (a worker, os.fork).
//
// A Python dataset's workers are forked copies of the interpreter: start()
// builds the Loader (which forks the zygote) holding the GIL, between
// PyOS_BeforeFork and PyOS_AfterFork_Parent, as os.fork does.
//
// Every C++ exception becomes sluice.Error with the runtime's message (the
// same text `sluice run` prints after "error: ").
#pragma once

#include <pybind11/pybind11.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <sys/types.h>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "batch.h"
#include "sluice/loader.h"
#include "sluice/record.h"
#include "sluice/run_report.h"

namespace sluice::python {

namespace py = pybind11;

// What a delivered batch becomes in Python.
enum class Delivery {
  batch,   // a Batch (field name -> Array)
  dict,    // a dict of Arrays
  tuple,   // a tuple of Arrays, in field order
  single,  // one Array
};

// What a _Loader runs.
struct LoaderSource {
  sluice::Options options;
  std::function<sluice::RecordHeader()> record_header;
  py::dict info;                        // for Loader.info
  std::function<sluice::ScriptRemoteStats()> remote_stats;  // remote sources: for Loader.stats()
  bool python_workers = false;          // the workers run Python: fork holding the GIL
  Delivery delivery = Delivery::batch;
  bool rows = false;                    // a sequence: cut each field to the batch's kRowsField rows
  py::object keep;                      // the Python objects the workers borrow
  sluice::ScriptOptions script;         // the settings given: write()'s uploads use the remote ones
};

class PyLoader {
 public:
  // record: a run record's path, or "".
  PyLoader(LoaderSource source, std::string record);
  // A pipeline.lua; settings: (name, value) pairs with RunSettings' names.
  static std::unique_ptr<PyLoader> from_script(const std::string& path,
                                               const std::vector<std::pair<std::string, std::string>>& settings,
                                               std::string record);

  // (Re)creates the Loader, from the first batch or from a state's JSON.
  // same_run: the workers restart within the run (a loop left early), which
  // keeps writing the same run record; else a record is begun afresh.
  void start(const std::optional<std::string>& resume_json, bool same_run = false);
  bool started();
  // The next batch of `epoch`, or None when the epoch (or the run) is over.
  // A Ctrl-C that came while it waited is raised here, the batch kept for
  // the next call. The batch returned is also kept (until the next call) for
  // take_back().
  py::object next(std::uint64_t epoch);
  // The batch the last next() returned was not handed on to the loop (Ctrl-C
  // or an error while Python turned it into tensors): the next call returns
  // it again, and state_json() does not count it meanwhile.
  void take_back();

  // sluice.write(): one epoch of this loader's batches, in order, into shards
  // in `dir`, a folder or s3://bucket/prefix/ staged in `staging` ("" = the
  // default) (sluice/io/shard_writer.h: resumes where a killed write
  // stopped). The loader must not have started. Returns the manifest's JSON
  // and a list of (sample, reason) for each sample on_error = skip left out.
  pybind11::tuple write(const std::string& dir, const std::string& format, std::uint64_t shard_samples,
                        std::uint64_t shard_bytes, const std::string& staging);

  std::string state_json();
  std::uint64_t current_epoch();
  bool finished();
  // Whether the last next() ended in an exception (a sluice.Error, Ctrl-C
  // while waiting): the loop was left by the loader, not by its consumer.
  bool left_by_exception() const { return left_by_exception_; }
  py::dict stats();
  std::uint32_t slots();
  std::vector<int> worker_pids();
  py::tuple memory();
  std::uint64_t batches_per_epoch() const;
  py::dict info() const { return source_.info; }
  // Stops the workers (the arena lives on while batches or tensors hold it)
  // and completes the run record. Nothing in a forked child.
  void close();

  // For the GC (bind_loader): what the workers borrow, and dropping it.
  static PyLoader* of(PyObject* self);
  const py::object& kept() const { return source_.keep; }
  void drop_kept();

 private:
  void close_locked();
  // Throws Error in a forked child (a worker, os.fork): the Loader is its parent's.
  void check_process() const;
  sluice::Loader& loader() const;
  void finish_record();
  py::object deliver(sluice::Batch batch) const;

  LoaderSource source_;
  std::string record_path_;
  std::unique_ptr<sluice::Loader> loader_;
  std::unique_ptr<sluice::RunRecorder> recorder_;
  std::unique_ptr<sluice::SkipReport> skips_;
  std::optional<sluice::Batch> pending_;  // taken from the loader, not yet handed to Python (next())
  std::optional<sluice::Batch> delivering_;  // taken, becoming Python objects: not yet the loop's (state_json)
  std::optional<sluice::Batch> returned_; // what next() returned last, for take_back(): the same
                                          // slot as the loop's batch, released at the next call
  std::atomic<bool> left_by_exception_{false};
  bool pending_recorded_ = false;         // ... and already in the run record
  pid_t owner_pid_;
  std::uint64_t owner_generation_;  // sluice::fork_generation() there: tells a forked copy without a system call
  std::mutex mutex_;
};

// Loader.info's entries that come from the options: dataset_size,
// batch_size, epochs, workers, seed, shuffle, drop_last, rank, world_size,
// held_timeout_ms and fields as (name, dtype, shape) tuples.
py::dict options_info(const sluice::Options& options);

// Adds _Loader and EpochIterator to the module.
void bind_loader(py::module_& m);

}  // namespace sluice::python
