// dataset_producer.h: the Producer that runs a Python dataset in the workers.
//
// Each worker is a forked copy of the host's interpreter. The host builds the
// Loader holding the GIL, between PyOS_BeforeFork and PyOS_AfterFork_Parent
// (see PyLoader::start), so the zygote's copy of the interpreter has one
// consistent owner of the GIL: the thread that forked. A worker, forked from
// the zygote, calls PyOS_AfterFork_Child in start_worker() before any other
// Python: it makes a fresh GIL owned by the worker's one thread, forgets the
// host's other threads and runs os.register_at_fork(after_in_child=...) hooks.
// The worker never releases the GIL and never returns to Python's main loop;
// it ends in _exit (no atexit handlers, no flush of the host's buffers).
//
// Kinds:
//   sample    dataset[index] -> a dict, tuple or single value of arrays or
//             scalars, one per field: written into the sample's row of each
//             field (one copy, streaming stores for large ones). A str, bytes
//             or variable-length array (a Ragged leaf of the description, see
//             sluice/_structure.py) fills its row of the values field from the
//             start, zeroes the rest of the row, and writes its length (bytes
//             for str and bytes, first-dimension entries for an array) into
//             its row of the lengths field.
//   sequence  sequence[batch_index] -> a whole batch, carried as one sample of
//             shape [rows, ...] plus the hidden int64 field kRowsField (a batch
//             may be shorter than the first: the rest of its rows is zeroed).
//   fill      fn(index, out): out maps field names to NumPy views of the
//             sample's rows of the slot; fn writes into them (no copy at all).
//
// Every value is checked against its field (dtype, shape) before a byte is
// written; a mismatch or a Python exception throws sluice::Error with the
// worker's traceback, after the Python call has returned, so the runtime's
// on_error policy names the sample. Python scalars are converted to the
// field's dtype; arrays must have it.
//
// The Python objects are borrowed: the host's _Loader holds them for as long
// as any Loader built from these Options lives, and each worker has a copy of
// that reference. Destroying a DatasetProducer never touches Python, so a
// Loader may be destroyed without the GIL.
//
// Thread safety: one per worker process, used by that worker's thread only.
#pragma once

#include <Python.h>

#include <cstdint>
#include <string>
#include <vector>

#include "global_seeds.h"
#include "sluice/options.h"
#include "sluice/producer.h"

namespace sluice::python {

inline constexpr const char* kRowsField = "__rows__";

enum class DatasetKind { sample, sequence, fill };

// Where each field lies in a sample (or a sequence's batch): dicts and tuples
// nest (a list counts as a tuple where the first sample had one), anything
// else is one field. Built from the host's description of the first sample
// (sluice/__init__.py: a field index, a dict {key: node} or a list [node]).
struct SampleNode {
  enum class Kind { field, dict, tuple, ragged };
  enum class Ragged { str, bytes, array };
  Kind kind = Kind::field;
  std::size_t field = 0;          // field, ragged: its (values') index in DatasetSpec::fields
  std::size_t lengths = 0;        // ragged: the index of its lengths field
  Ragged ragged = Ragged::array;  // ragged: what the sample holds
  std::vector<PyObject*> keys;    // Kind::dict: borrowed from the description, which the host keeps
  std::vector<SampleNode> children;
  std::string label;              // where it is in a sample, for errors: "", "['meta']", "[1][0]"
};

// The tree of a description; throws Error if it is not one, or if its field
// indices are not 0 .. fields - 1 each once.
SampleNode sample_tree(PyObject* description, std::size_t fields);

struct DatasetSpec {
  DatasetKind kind = DatasetKind::sample;
  SampleNode tree;                  // sample and sequence: where each field lies
  PyObject* source = nullptr;       // borrowed: the dataset, sequence or fill function
  PyObject* worker_init = nullptr;  // borrowed, or nullptr: called as worker_init(worker_id)
  std::vector<FieldSpec> fields;    // as Options::fields (with kRowsField last for a sequence)
  std::uint64_t seed = 0;
  bool declared = false;  // fields came from fields=, not from the first sample
  bool seed_globals = true;  // seed random, numpy.random and torch per sample (global_seeds.h)
};

class DatasetProducer final : public Producer {
 public:
  explicit DatasetProducer(DatasetSpec spec) : spec_(std::move(spec)) {}

  void start_worker(std::uint32_t worker_id) override;
  void fill(BatchContext& batch) override;

 private:
  void fill_sample(BatchContext& batch, std::size_t j);
  void fill_sequence(BatchContext& batch);
  void fill_views(BatchContext& batch, std::size_t j);
  // Marks the sample being made (sluice.rng()) and seeds the global generators.
  void begin(BatchContext& batch, std::size_t j);
  // values_[f] = field f of `value` (borrowed from it), or an Error naming what differs.
  void collect(PyObject* value, const SampleNode& node, const std::string& what);

  void label_fields(const SampleNode& node);

  DatasetSpec spec_;
  std::vector<PyObject*> values_;    // this sample's fields, borrowed from it
  std::vector<std::string> labels_;  // each field's place in a sample
  std::vector<const SampleNode*> ragged_;  // per field: its Ragged leaf (values and lengths fields), or nullptr
  GlobalSeeds seeds_;
  std::vector<PyObject*> dtypes_;  // each field's numpy dtype, made in the worker
};

// The sample a worker is making, for sluice.rng(): seed, epoch and index
// (a sequence's batch index). False outside a fill and outside the host's trial.
bool current_sample(std::uint64_t& seed, std::uint64_t& epoch, std::uint64_t& index);
// The host's trial sets it too, around its call of sample 0.
void set_current_sample(bool active, std::uint64_t seed = 0, std::uint64_t epoch = 0, std::uint64_t index = 0);

// The pending Python exception as text, traceback included, prefixed by
// `what`, cut to fit a worker's error report; clears it.
std::string python_error(const std::string& what);

}  // namespace sluice::python
