#include "dataset_producer.h"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cmath>
#include <cstring>
#include <utility>

#include "sluice/batch_copy.h"
#include "sluice/error.h"

namespace sluice::python {

namespace py = pybind11;

namespace {

// A worker's error report holds 4096 bytes: a long traceback keeps its start
// (what failed) and its end (where and why).
constexpr std::size_t kMessageBytes = 4000;
constexpr std::size_t kMessageHead = 800;

struct Current {
  bool active = false;
  std::uint64_t seed = 0, epoch = 0, index = 0;
} g_current;

std::string fit(std::string text) {
  if (text.size() <= kMessageBytes) return text;
  const std::string cut = "\n  [... traceback cut ...]\n";
  const std::size_t tail = kMessageBytes - kMessageHead - cut.size();
  return text.substr(0, kMessageHead) + cut + text.substr(text.size() - tail);
}

std::string shape_text(const std::int64_t* shape, std::size_t ndim) {
  std::string text = "(";
  for (std::size_t d = 0; d < ndim; ++d) text += (d ? ", " : "") + std::to_string(shape[d]);
  return text + (ndim == 1 ? ",)" : ")");
}

std::string shape_text(const std::vector<std::int64_t>& shape) { return shape_text(shape.data(), shape.size()); }

std::size_t data_fields(const DatasetSpec& spec) {
  return spec.kind == DatasetKind::sequence ? spec.fields.size() - 1 : spec.fields.size();
}

// Where the fields came from, for errors: "the first had (4,)", "fields= says (4,)".
std::string had(const DatasetSpec& spec) { return spec.declared ? "fields= says" : "the first had"; }
std::string was(const DatasetSpec& spec) { return spec.declared ? "fields= says" : "the first was"; }

bool python_scalar(PyObject* v) { return PyLong_CheckExact(v) || PyFloat_CheckExact(v) || PyBool_Check(v); }

}  // namespace

namespace {

std::size_t field_index(PyObject* d, std::vector<int>& seen) {
  const long f = PyLong_Check(d) ? PyLong_AsLong(d) : -1;
  if (f < 0 || static_cast<std::size_t>(f) >= seen.size() || seen[f]++) {
    PyErr_Clear();
    throw Error("sluice: a sample description names field " + std::to_string(f) + " twice or out of range");
  }
  return static_cast<std::size_t>(f);
}

void build(PyObject* d, SampleNode& node, std::vector<int>& seen) {
  if (PyLong_Check(d)) {
    node.field = field_index(d, seen);
    return;
  }
  if (PyTuple_Check(d)) {  // _structure.Ragged: ("ragged", kind, values, lengths)
    const char* kind = PyTuple_GET_SIZE(d) == 4 ? PyUnicode_AsUTF8(PyTuple_GET_ITEM(d, 1)) : nullptr;
    if (!kind) {
      PyErr_Clear();
      throw Error("sluice: a sample description holds a tuple that is not a variable-length leaf");
    }
    node.kind = SampleNode::Kind::ragged;
    const std::string k = kind;
    if (k == "str") {
      node.ragged = SampleNode::Ragged::str;
    } else if (k == "bytes") {
      node.ragged = SampleNode::Ragged::bytes;
    } else if (k == "array") {
      node.ragged = SampleNode::Ragged::array;
    } else {
      throw Error("sluice: a sample description holds a variable-length leaf of kind '" + k + "'");
    }
    node.field = field_index(PyTuple_GET_ITEM(d, 2), seen);
    node.lengths = field_index(PyTuple_GET_ITEM(d, 3), seen);
    return;
  }
  if (PyDict_Check(d)) {
    node.kind = SampleNode::Kind::dict;
    PyObject *key = nullptr, *child = nullptr;
    for (Py_ssize_t pos = 0; PyDict_Next(d, &pos, &key, &child);) {
      if (!PyUnicode_Check(key)) throw Error("sluice: a sample's keys must be str");
      node.keys.push_back(key);
      SampleNode& c = node.children.emplace_back();
      c.label = node.label + "['" + py::str(key).cast<std::string>() + "']";
      build(child, c, seen);
    }
    return;
  }
  if (PyList_Check(d)) {
    node.kind = SampleNode::Kind::tuple;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(d); ++i) {
      SampleNode& c = node.children.emplace_back();
      c.label = node.label + "[" + std::to_string(i) + "]";
      build(PyList_GET_ITEM(d, i), c, seen);
    }
    return;
  }
  throw Error("sluice: a sample description holds " + std::string(Py_TYPE(d)->tp_name));
}

}  // namespace

SampleNode sample_tree(PyObject* description, std::size_t fields) {
  SampleNode root;
  std::vector<int> seen(fields, 0);
  build(description, root, seen);
  for (std::size_t f = 0; f < fields; ++f) {
    if (!seen[f]) throw Error("sluice: a sample description leaves out field " + std::to_string(f));
  }
  return root;
}

bool current_sample(std::uint64_t& seed, std::uint64_t& epoch, std::uint64_t& index) {
  seed = g_current.seed;
  epoch = g_current.epoch;
  index = g_current.index;
  return g_current.active;
}

void set_current_sample(bool active, std::uint64_t seed, std::uint64_t epoch, std::uint64_t index) {
  g_current = {active, seed, epoch, index};
}

std::string python_error(const std::string& what) {
  PyObject *type = nullptr, *value = nullptr, *tb = nullptr;
  PyErr_Fetch(&type, &value, &tb);
  PyErr_NormalizeException(&type, &value, &tb);
  if (!type) return what + " failed";
  if (tb && value) PyException_SetTraceback(value, tb);
  py::object t = py::reinterpret_steal<py::object>(type);
  py::object v = py::reinterpret_steal<py::object>(value);
  py::object trace = py::reinterpret_steal<py::object>(tb);
  std::string summary, text;
  try {
    py::list lines = py::module_::import("traceback").attr("format_exception")(t, v, trace ? trace : py::none());
    for (py::handle line : lines) text += line.cast<std::string>();
    py::list last = py::module_::import("traceback").attr("format_exception_only")(t, v);
    for (py::handle line : last) summary += line.cast<std::string>();
  } catch (const py::error_already_set&) {
    PyErr_Clear();
    summary = reinterpret_cast<PyTypeObject*>(t.ptr())->tp_name;
  }
  while (!summary.empty() && summary.back() == '\n') summary.pop_back();
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return fit(what + " raised " + summary + "\n" + text);
}

void DatasetProducer::label_fields(const SampleNode& node) {
  if (node.kind == SampleNode::Kind::field || node.kind == SampleNode::Kind::ragged) {
    if (node.field < labels_.size()) labels_[node.field] = node.label;
    if (node.kind == SampleNode::Kind::ragged && node.field < ragged_.size() && node.lengths < ragged_.size()) {
      ragged_[node.field] = &node;
      ragged_[node.lengths] = &node;
    }
    return;
  }
  for (const SampleNode& child : node.children) label_fields(child);
}

void DatasetProducer::start_worker(std::uint32_t worker_id) {
  PyOS_AfterFork_Child();
  // Python's own unraisable hook back (the parent had swapped it in while
  // it forked the zygote: py_loader.cpp, ForkGuard).
  if (PySys_SetObject("unraisablehook", PySys_GetObject("__unraisablehook__")) != 0) PyErr_Clear();
  values_.assign(spec_.fields.size(), nullptr);
  labels_.assign(spec_.fields.size(), "");
  ragged_.assign(spec_.fields.size(), nullptr);
  label_fields(spec_.tree);
  try {
    for (const FieldSpec& field : spec_.fields) {
      dtypes_.push_back(py::dtype(std::string(dtype_name(field.dtype))).release().ptr());
    }
  } catch (const py::error_already_set&) {
    throw Error(python_error("numpy in the worker"));
  }
  // torch, if the host imported it, runs one thread per worker, as in
  // PyTorch's DataLoader workers: its intra-op pool was not forked, and a
  // worker that called into it as the host had set it up would wait forever.
  if (PyObject* torch = PyDict_GetItemString(PyImport_GetModuleDict(), "torch")) {  // borrowed
    PyObject* result = PyObject_CallMethod(torch, "set_num_threads", "i", 1);
    if (!result) throw Error(python_error("torch.set_num_threads(1) in the worker"));
    Py_DECREF(result);
  }
  if (spec_.worker_init) {
    PyObject* result = PyObject_CallFunction(spec_.worker_init, "I", static_cast<unsigned>(worker_id));
    if (!result) throw Error(python_error("worker_init(" + std::to_string(worker_id) + ")"));
    Py_DECREF(result);
  }
}

namespace {

// What a fill needs for one value: checks and copies it into field f.
class ValueWriter {
 public:
  ValueWriter(const DatasetSpec& spec, const std::vector<PyObject*>& dtypes) : spec_(spec), dtypes_(dtypes) {}

  // The value as an array of field f's dtype, or an Error.
  py::array array_of(PyObject* v, std::size_t f, const std::string& what) const {
    if (v == Py_None) throw Error(what + " is None, " + was(spec_) + " " + std::string(dtype_name(spec_.fields[f].dtype)));
    py::array a = py::array::ensure(v);
    if (!a) throw Error(what + " is " + Py_TYPE(v)->tp_name + ", which is not an array");
    // A list is one array as NumPy makes it, which may round an integer item
    // among floats: refused, as the first sample's is (_structure.list_problem).
    // A list of floats alone (Python's or NumPy's: the usual one) needs no look.
    if (PyList_Check(v) && a.dtype().kind() == 'f') {
      // References of the process's own, for its life (never released: the
      // interpreter may be gone when statics are destroyed).
      static PyObject* const floating = py::object(py::module_::import("numpy").attr("floating")).release().ptr();
      bool floats = true;
      for (Py_ssize_t i = 0; floats && i < PyList_GET_SIZE(v); ++i) {
        PyObject* item = PyList_GET_ITEM(v, i);
        floats = PyFloat_Check(item) || PyObject_TypeCheck(item, reinterpret_cast<PyTypeObject*>(floating));
      }
      if (!floats) {
        static PyObject* const check = py::object(py::module_::import("sluice._structure").attr("list_problem")).release().ptr();
        py::object problem = py::reinterpret_borrow<py::object>(check)(py::handle(v), a, what);
        if (!problem.is_none()) throw Error(problem.cast<std::string>());
      }
    }
    PyObject* want = dtypes_[f];
    PyObject* got = reinterpret_cast<PyObject*>(a.dtype().ptr());
    if (got != want && PyObject_RichCompareBool(got, want, Py_EQ) != 1) {
      PyErr_Clear();
      if (python_scalar(v)) return scalar_as(v, f, what);
      throw Error(what + " is " + py::str(a.dtype()).cast<std::string>() + ", " + was(spec_) + " " +
                  std::string(dtype_name(spec_.fields[f].dtype)));
    }
    return a;
  }

  // A Python number as field f's dtype, or an Error where the dtype cannot
  // hold it: an integer or bool field takes only values it represents
  // exactly (300 is not a uint8, 2.5 not an int64); a floating field rounds.
  py::array scalar_as(PyObject* v, std::size_t f, const std::string& what) const {
    const DType dtype = spec_.fields[f].dtype;
    auto cannot_hold = [&] {
      return Error(what + " is " + py::repr(v).cast<std::string>() + ", which " + std::string(dtype_name(dtype)) +
                   " cannot hold");
    };
    py::object cast;
    try {
      cast = py::module_::import("numpy").attr("asarray")(py::handle(v), py::handle(dtypes_[f]));
    } catch (py::error_already_set&) {  // NumPy 2's OverflowError (1.24 warns and wraps: checked below)
      throw cannot_hold();
    }
    const bool floating = dtype == DType::f16 || dtype == DType::bf16 || dtype == DType::f32 || dtype == DType::f64;
    if (floating) {
      // Rounded, but never past the type's range into inf (NaN and inf given pass as they are).
      const double in = PyFloat_AsDouble(v);
      if (in == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        throw cannot_hold();
      }
      const double out = cast.attr("item")().cast<double>();
      if (std::isinf(out) && std::isfinite(in)) throw cannot_hold();
    } else {
      const int same = PyObject_RichCompareBool(cast.attr("item")().ptr(), v, Py_EQ);
      if (same != 1) {
        PyErr_Clear();
        throw cannot_hold();
      }
    }
    return py::array::ensure(cast);
  }

  // Copies `a` (already checked) to dst, bytes long.
  static void copy(const py::array& a, std::byte* dst, std::size_t bytes) {
    if (bytes == 0) return;
    if (a.flags() & py::array::c_style) {
      copy_to_batch(dst, a.data(), bytes);
      return;
    }
    py::array view(a.dtype(), std::vector<py::ssize_t>(a.shape(), a.shape() + a.ndim()), dst,
                   py::capsule(dst));  // a base: a view of the slot, not a copy
    py::module_::import("numpy").attr("copyto")(view, a);
  }

  // Field f of one sample.
  void write_sample(PyObject* v, std::size_t f, std::byte* dst, std::size_t bytes, const std::string& what) const {
    py::array a = array_of(v, f, what);
    const std::vector<std::int64_t>& shape = spec_.fields[f].shape;
    bool same = static_cast<std::size_t>(a.ndim()) == shape.size();
    for (std::size_t d = 0; same && d < shape.size(); ++d) same = a.shape(d) == shape[d];
    if (!same) {
      std::vector<std::int64_t> got(a.shape(), a.shape() + a.ndim());
      throw Error(what + " has shape " + shape_text(got) + ", " + had(spec_) + " " + shape_text(shape));
    }
    copy(a, dst, bytes);
  }

  // A variable-length leaf of one sample: its entries from the start of the
  // values row (bytes long), zeros after them, their count in *length.
  void write_ragged(PyObject* v, const SampleNode& leaf, std::byte* dst, std::size_t bytes, std::int64_t* length,
                    const std::string& what) const {
    const FieldSpec& field = spec_.fields[leaf.field];
    const std::int64_t room = field.shape[0];
    std::size_t used = 0;
    std::int64_t count = 0;
    if (leaf.ragged == SampleNode::Ragged::array) {
      py::array a = py::array::ensure(v);
      if (a && a.size() == 0) {  // [] is float64 to NumPy: an empty value of any dtype is 0 entries
        std::memset(dst, 0, bytes);
        *length = 0;
        return;
      }
      a = array_of(v, leaf.field, what);
      bool same = static_cast<std::size_t>(a.ndim()) == field.shape.size();
      for (std::size_t d = 1; same && d < field.shape.size(); ++d) same = a.shape(d) == field.shape[d];
      if (!same) {
        std::vector<std::int64_t> got(a.shape(), a.shape() + a.ndim());
        std::vector<std::int64_t> want = field.shape;
        want[0] = -1;
        throw Error(what + " has shape " + shape_text(got) + ", " + had(spec_) + " " + shape_text(want) +
                    " (-1: any length up to its room)");
      }
      count = a.shape(0);
      check_room(count, room, field.name, what, "entries");
      used = static_cast<std::size_t>(count) * (bytes / static_cast<std::size_t>(room));
      copy(a, dst, used);
    } else {
      // The value as one contiguous bytes-like object: a str as UTF-8 (lone
      // surrogates, as os.fsdecode makes of a non-UTF-8 file name, kept by
      // surrogatepass), a strided memoryview copied.
      py::object bytes_like;
      if (leaf.ragged == SampleNode::Ragged::str) {
        if (!PyUnicode_Check(v)) throw Error(what + " is " + Py_TYPE(v)->tp_name + ", not str as " + was(spec_));
        bytes_like = py::reinterpret_steal<py::object>(PyUnicode_AsEncodedString(v, "utf-8", "surrogatepass"));
        if (!bytes_like) throw Error(python_error(what + " as UTF-8"));
      } else {
        if (!PyBytes_Check(v) && !PyByteArray_Check(v) && !PyMemoryView_Check(v)) {
          throw Error(what + " is " + Py_TYPE(v)->tp_name + ", not bytes as " + was(spec_));
        }
        bytes_like = py::reinterpret_borrow<py::object>(v);
        if (PyMemoryView_Check(v) && !PyBuffer_IsContiguous(PyMemoryView_GET_BUFFER(v), 'C')) {
          bytes_like = py::reinterpret_steal<py::object>(PyBytes_FromObject(v));
          if (!bytes_like) throw Error(python_error(what + " as bytes"));
        }
      }
      Py_buffer view{};
      if (PyObject_GetBuffer(bytes_like.ptr(), &view, PyBUF_CONTIG_RO) != 0) {
        throw Error(python_error(what + " as bytes"));
      }
      count = view.len;
      used = static_cast<std::size_t>(view.len);
      if (count <= room && used) copy_to_batch(dst, view.buf, used);
      PyBuffer_Release(&view);
      check_room(count, room, field.name, what, "bytes");
    }
    std::memset(dst + used, 0, bytes - used);  // the same bytes in every run: records digest them
    *length = count;
  }

 private:
  static void check_room(std::int64_t count, std::int64_t room, const std::string& name, const std::string& what,
                         const char* unit) {
    if (count <= room) return;
    throw Error(what + " holds " + std::to_string(count) + " " + unit + ", more than the " + std::to_string(room) +
                " a sample of '" + name + "' has room for: give the Loader ragged={'" + name + "': " +
                std::to_string(count) + "} or more");
  }

  const DatasetSpec& spec_;
  const std::vector<PyObject*>& dtypes_;
};

py::object get_item(PyObject* source, std::uint64_t index, const std::string& what) {
  py::object key = py::reinterpret_steal<py::object>(PyLong_FromUnsignedLongLong(index));
  PyObject* value = PyObject_GetItem(source, key.ptr());
  if (!value) throw Error(python_error(what));
  return py::reinterpret_steal<py::object>(value);
}

void flush_stdio() {
  for (const char* name : {"stdout", "stderr"}) {
    PyObject* stream = PySys_GetObject(name);  // borrowed
    if (!stream || stream == Py_None) continue;
    PyObject* r = PyObject_CallMethod(stream, "flush", nullptr);
    if (r) {
      Py_DECREF(r);
    } else {
      PyErr_Clear();
    }
  }
}

}  // namespace

void DatasetProducer::collect(PyObject* value, const SampleNode& node, const std::string& what) {
  switch (node.kind) {
    case SampleNode::Kind::field:
    case SampleNode::Kind::ragged:
      values_[node.field] = value;
      return;
    case SampleNode::Kind::dict: {
      if (!PyDict_Check(value)) {
        throw Error(what + node.label + " is " + Py_TYPE(value)->tp_name + ", not a dict as " + was(spec_));
      }
      if (static_cast<std::size_t>(PyDict_Size(value)) != node.keys.size()) {
        std::string names;
        for (PyObject* key : node.keys) names += (names.empty() ? "" : ", ") + py::str(key).cast<std::string>();
        throw Error(what + node.label + " has " + std::to_string(PyDict_Size(value)) + " keys, " + had(spec_) + " " +
                    std::to_string(node.keys.size()) + " (" + names + ")");
      }
      for (std::size_t i = 0; i < node.keys.size(); ++i) {
        PyObject* v = PyDict_GetItemWithError(value, node.keys[i]);  // borrowed
        if (!v) {
          PyErr_Clear();
          throw Error(what + node.label + " has no '" + py::str(node.keys[i]).cast<std::string>() + "', which " +
                      (spec_.declared ? "fields= names" : "the first had"));
        }
        collect(v, node.children[i], what);
      }
      return;
    }
    case SampleNode::Kind::tuple: {
      if (!PyTuple_Check(value) && !PyList_Check(value)) {
        throw Error(what + node.label + " is " + Py_TYPE(value)->tp_name + ", not a tuple as " + was(spec_));
      }
      const Py_ssize_t size = PySequence_Fast_GET_SIZE(value);
      if (static_cast<std::size_t>(size) != node.children.size()) {
        throw Error(what + node.label + " has " + std::to_string(size) + " items, " + had(spec_) + " " +
                    std::to_string(node.children.size()));
      }
      for (std::size_t i = 0; i < node.children.size(); ++i) {
        collect(PySequence_Fast_GET_ITEM(value, static_cast<Py_ssize_t>(i)), node.children[i], what);
      }
      return;
    }
  }
}

void DatasetProducer::fill_sample(BatchContext& batch, std::size_t j) {
  const std::uint64_t index = batch.samples()[j];
  const std::string what = "dataset[" + std::to_string(index) + "]";
  py::object value = get_item(spec_.source, index, what);
  collect(value.ptr(), spec_.tree, what);
  ValueWriter writer(spec_, dtypes_);
  for (std::size_t f = 0; f < spec_.fields.size(); ++f) {
    if (const SampleNode* leaf = ragged_[f]) {
      if (f != leaf->field) continue;  // its lengths field: written with its values
      writer.write_ragged(values_[f], *leaf, batch.data(f, j), batch.sample_bytes(f),
                          batch.as<std::int64_t>(leaf->lengths, j), what + labels_[f]);
      continue;
    }
    writer.write_sample(values_[f], f, batch.data(f, j), batch.sample_bytes(f), what + labels_[f]);
  }
}

void DatasetProducer::fill_sequence(BatchContext& batch) {
  const std::uint64_t index = batch.samples()[0];
  const std::string what = "sequence[" + std::to_string(index) + "]";
  py::object value = get_item(spec_.source, index, what);
  collect(value.ptr(), spec_.tree, what);
  ValueWriter writer(spec_, dtypes_);
  const std::size_t n = data_fields(spec_);
  std::int64_t rows = -1;
  for (std::size_t f = 0; f < n; ++f) {
    const std::string label = what + labels_[f];
    py::array a = writer.array_of(values_[f], f, label);
    const std::vector<std::int64_t>& shape = spec_.fields[f].shape;  // [max rows, ...]
    bool same = static_cast<std::size_t>(a.ndim()) == shape.size() && a.ndim() >= 1;
    for (std::size_t d = 1; same && d < shape.size(); ++d) same = a.shape(d) == shape[d];
    std::vector<std::int64_t> got(a.shape(), a.shape() + a.ndim());
    if (!same) {
      throw Error(label + " has shape " + shape_text(got) + ", the first batch had " + shape_text(shape) +
                  " (a batch may have fewer rows, nothing else may differ)");
    }
    if (got[0] > shape[0]) {
      throw Error(label + " has " + std::to_string(got[0]) + " rows, more than the first batch's " +
                  std::to_string(shape[0]) + "; declare rows=" + std::to_string(got[0]) + " or more");
    }
    if (rows >= 0 && got[0] != rows) {
      throw Error(label + " has " + std::to_string(got[0]) + " rows, the batch's first field " +
                  std::to_string(rows));
    }
    rows = got[0];
    const std::size_t row_bytes = batch.sample_bytes(f) / static_cast<std::size_t>(shape[0]);
    const std::size_t used = row_bytes * static_cast<std::size_t>(rows);
    ValueWriter::copy(a, batch.data(f, 0), used);
    // Rows past the batch's end are zero, so a record's digest is the same in every run.
    std::memset(batch.data(f, 0) + used, 0, batch.sample_bytes(f) - used);
  }
  *batch.as<std::int64_t>(n, 0) = rows;
}

void DatasetProducer::fill_views(BatchContext& batch, std::size_t j) {
  const std::uint64_t index = batch.samples()[j];
  py::dict out;
  for (std::size_t f = 0; f < spec_.fields.size(); ++f) {
    const FieldSpec& field = spec_.fields[f];
    std::vector<py::ssize_t> shape(field.shape.begin(), field.shape.end());
    out[py::str(field.name)] = py::array(py::reinterpret_borrow<py::dtype>(dtypes_[f]), shape,
                                         batch.data(f, j), py::capsule(batch.data(f, j)));
  }
  py::object key = py::reinterpret_steal<py::object>(PyLong_FromUnsignedLongLong(index));
  PyObject* result = PyObject_CallFunctionObjArgs(spec_.source, key.ptr(), out.ptr(), nullptr);
  if (!result) throw Error(python_error("fill(" + std::to_string(index) + ", out)"));
  Py_DECREF(result);
}

void DatasetProducer::begin(BatchContext& batch, std::size_t j) {
  batch.begin_sample(j);
  set_current_sample(true, spec_.seed, batch.epoch(), batch.samples()[j]);
  if (spec_.seed_globals) seeds_.seed(spec_.seed, batch.epoch(), batch.samples()[j]);
}

void DatasetProducer::fill(BatchContext& batch) {
  struct Done {
    ~Done() {
      set_current_sample(false);
      flush_stdio();  // what the worker printed, before it may be killed
    }
  } done;
  try {
    if (spec_.kind == DatasetKind::sequence) {
      if (batch.size() == 0) return;  // its one sample, the sequence's batch, was skipped
      begin(batch, 0);
      fill_sequence(batch);
      return;
    }
    for (std::size_t j = 0; j < batch.size(); ++j) {
      begin(batch, j);
      if (spec_.kind == DatasetKind::fill) {
        fill_views(batch, j);
      } else {
        fill_sample(batch, j);
      }
    }
  } catch (const py::error_already_set& e) {
    // A pybind11 call that failed (numpy's copyto, say): its Python error, as text.
    throw Error(fit(std::string("sample ") + std::to_string(g_current.index) + ": " + e.what()));
  }
}

}  // namespace sluice::python
