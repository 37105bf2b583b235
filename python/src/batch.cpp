#include "batch.h"

#include <Python.h>
#include <pybind11/stl.h>

#include <utility>

#include "sluice/error.h"

namespace sluice::python {

namespace {

constexpr const char* kCapsuleName = "dltensor";

// A capsule no consumer took (its name is still "dltensor") frees its tensor.
void capsule_destructor(PyObject* capsule) {
  if (!PyCapsule_IsValid(capsule, kCapsuleName)) return;  // renamed "used_dltensor": the consumer owns it
  auto* t = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, kCapsuleName));
  if (t && t->deleter) t->deleter(t);
}

// What an exported DLManagedTensor holds: the slot, and the shape and strides
// its DLTensor points into.
struct Export {
  std::shared_ptr<TensorOwner> owner;
  std::shared_ptr<const std::vector<std::int64_t>> shape, strides;
};

}  // namespace

Array::Array(std::shared_ptr<TensorOwner> owner, std::string name, std::string dtype)
    : owner_(std::move(owner)), name_(std::move(name)), dtype_(std::move(dtype)) {
  const DLTensor& t = owner_->tensor->dl_tensor;
  std::vector<std::int64_t> shape(t.shape, t.shape + t.ndim), strides(t.ndim);
  std::int64_t stride = 1;
  for (int d = t.ndim; d-- > 0;) {
    strides[d] = t.strides ? t.strides[d] : stride;
    stride *= t.shape[d];
  }
  shape_ = std::make_shared<const std::vector<std::int64_t>>(std::move(shape));
  strides_ = std::make_shared<const std::vector<std::int64_t>>(std::move(strides));
  byte_offset_ = t.byte_offset;
}

Array Array::first_row(std::int64_t rows) const {
  if (shape_->size() < 2 || (*shape_)[0] < 1 || rows < 0 || rows > (*shape_)[1]) {
    throw Error("sluice: " + name_ + " has no first row of " + std::to_string(rows) + " rows");
  }
  Array row = *this;
  std::vector<std::int64_t> shape(shape_->begin() + 1, shape_->end());
  shape[0] = rows;
  row.shape_ = std::make_shared<const std::vector<std::int64_t>>(std::move(shape));
  row.strides_ = std::make_shared<const std::vector<std::int64_t>>(strides_->begin() + 1, strides_->end());
  return row;
}

py::object Array::dlpack(const py::object& stream, const py::object& max_version, const py::object& dl_device,
                         const py::object& copy) const {
  (void)stream;       // host memory: there is no stream to synchronize with
  (void)max_version;  // DLPack 0.6: an unversioned "dltensor" capsule, which the protocol allows
  if (!copy.is_none() && copy.cast<bool>()) {
    throw Error("sluice arrays are exported without a copy (__dlpack__(copy=True) asked for one)");
  }
  if (!dl_device.is_none()) {
    std::pair<int, int> device;
    try {
      device = dl_device.cast<std::pair<int, int>>();
    } catch (const py::cast_error&) {
      throw Error("__dlpack__(dl_device=...) expects a (device_type, device_id) pair of ints, got " +
                  py::repr(dl_device).cast<std::string>());
    }
    if (device.first != kDLCPU) {
      throw Error("this build of sluice delivers batches in host memory (kDLCPU), not device type " +
                  std::to_string(device.first));
    }
  }
  auto* t = new DLManagedTensor{};
  auto* held = new Export{owner_, shape_, strides_};
  t->dl_tensor = owner_->tensor->dl_tensor;
  t->dl_tensor.ndim = static_cast<int>(shape_->size());
  t->dl_tensor.shape = const_cast<std::int64_t*>(shape_->data());
  t->dl_tensor.strides = const_cast<std::int64_t*>(strides_->data());
  t->dl_tensor.byte_offset = byte_offset_;
  t->manager_ctx = held;
  t->deleter = [](DLManagedTensor* self) {
    delete static_cast<Export*>(self->manager_ctx);
    delete self;
  };
  PyObject* capsule = PyCapsule_New(t, kCapsuleName, capsule_destructor);
  if (!capsule) {
    t->deleter(t);
    throw py::error_already_set();
  }
  return py::reinterpret_steal<py::object>(capsule);
}

py::tuple Array::shape() const { return py::tuple(py::cast(*shape_)); }

std::size_t Array::nbytes() const {
  const DLDataType& type = owner_->tensor->dl_tensor.dtype;
  std::size_t n = (type.bits * type.lanes + 7) / 8;
  for (std::int64_t d : *shape_) n *= static_cast<std::size_t>(d);
  return n;
}

std::uintptr_t Array::data_ptr() const {
  return reinterpret_cast<std::uintptr_t>(owner_->tensor->dl_tensor.data) + byte_offset_;
}

py::dict Array::array_interface() const {
  const DLDataType& type = owner_->tensor->dl_tensor.dtype;
  const std::size_t bytes = (type.bits * type.lanes + 7) / 8;
  std::string typestr = bytes == 1 ? "|" : "<";  // x86-64 and arm64: little-endian
  if (dtype_ == "bool") {
    typestr += "b";
  } else if (type.code == kDLInt) {
    typestr += "i";
  } else if (type.code == kDLUInt) {
    typestr += "u";
  } else if (type.code == kDLFloat) {
    typestr += "f";
  } else {
    throw Error("NumPy has no " + dtype_ + " (field " + name_ + "): use torch.from_dlpack");
  }
  typestr += std::to_string(bytes);
  py::list strides;
  for (std::int64_t s : *strides_) strides.append(s * static_cast<std::int64_t>(bytes));
  py::dict d;
  d["version"] = 3;
  d["shape"] = shape();
  d["typestr"] = typestr;
  d["data"] = py::make_tuple(data_ptr(), false);
  d["strides"] = py::tuple(strides);
  return d;
}

const sluice::Batch& PyBatch::get() const {
  if (!batch_) throw Error("this batch has been released (arrays and tensors made from it stay valid)");
  return batch_;
}

Array PyBatch::array(std::size_t i) const {
  const sluice::Batch& b = get();
  const sluice::FieldView v = b.field(i);
  return Array(std::make_shared<TensorOwner>(b.to_dlpack(i)), std::string(v.name),
               std::string(sluice::dtype_name(v.dtype)));
}

std::optional<std::size_t> PyBatch::find(std::string_view name) const {
  const sluice::Batch& b = get();
  for (std::size_t i = 0; i < b.field_count(); ++i) {
    if (b.field(i).name == name) return i;
  }
  return std::nullopt;
}

Array PyBatch::item(std::string_view name) const {
  if (std::optional<std::size_t> i = find(name)) return array(*i);
  std::string names;
  for (const std::string& key : keys()) names += (names.empty() ? "" : ", ") + key;
  throw Error("the batch has no field '" + std::string(name) + "'; its fields are " + names);
}

std::vector<std::string> PyBatch::keys() const {
  const sluice::Batch& b = get();
  std::vector<std::string> names;
  for (std::size_t i = 0; i < b.field_count(); ++i) names.emplace_back(b.field(i).name);
  return names;
}

py::list PyBatch::items() const {
  py::list out;
  const std::vector<std::string> names = keys();
  for (std::size_t i = 0; i < names.size(); ++i) out.append(py::make_tuple(names[i], array(i)));
  return out;
}

py::array_t<std::uint64_t> PyBatch::sample_ids() const {
  const std::span<const std::uint64_t> ids = get().sample_ids();
  return py::array_t<std::uint64_t>(static_cast<py::ssize_t>(ids.size()), ids.data());
}

void bind_batch(py::module_& m) {
  py::class_<Array>(m, "Array", "One field of a batch: a zero-copy DLPack exporter (torch.from_dlpack, numpy.from_dlpack)")
      .def("__dlpack__", &Array::dlpack, py::kw_only(), py::arg("stream") = py::none(),
           py::arg("max_version") = py::none(), py::arg("dl_device") = py::none(), py::arg("copy") = py::none())
      .def("__dlpack_device__", [](const Array&) { return py::make_tuple(static_cast<int>(kDLCPU), 0); })
      .def_property_readonly("name", &Array::name)
      .def_property_readonly("dtype", &Array::dtype)
      .def_property_readonly("shape", &Array::shape)
      .def_property_readonly("ndim", &Array::ndim)
      .def_property_readonly("nbytes", &Array::nbytes)
      .def_property_readonly("data_ptr", &Array::data_ptr)
      .def_property_readonly("__array_interface__", &Array::array_interface)
      .def("__array__", [](py::object self, py::object dtype, py::object copy) {
        // numpy.asarray takes __array_interface__ before __array__: a view, whose base keeps the slot.
        py::object a = py::module_::import("numpy").attr("asarray")(self);
        if (!dtype.is_none()) a = a.attr("astype")(dtype, py::arg("copy") = false);
        if (!copy.is_none() && copy.cast<bool>()) a = a.attr("copy")();
        return a;
      }, py::arg("dtype") = py::none(), py::arg("copy") = py::none())
      .def("__len__", &Array::length)
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
}

}  // namespace sluice::python
