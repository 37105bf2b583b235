// batch.h: a delivered batch and its fields, as Python sees them.
//
// Batch  one delivered batch: field name -> Array, epoch, index, sample ids.
// Array  one field of a batch, exported through the DLPack protocol
//        (__dlpack__ / __dlpack_device__) with no copy: torch.from_dlpack and
//        numpy.from_dlpack adopt the slot's memory. An Array, and every tensor
//        made from it, keeps the slot alive; the slot returns to the loader
//        when the last of them (and the Batch) is gone. It also implements
//        NumPy's __array_interface__ and __array__ (numpy.asarray is a view).
//
// Thread safety: used with the GIL held; the slot's lease is released by
// whichever thread frees the last holder.
#pragma once

#include <dlpack/dlpack.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/batch.h"

namespace sluice::python {

namespace py = pybind11;

// The DLManagedTensor Batch::to_dlpack made for one field: it holds a lease on
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

class Array {
 public:
  Array(std::shared_ptr<TensorOwner> owner, std::string name, std::string dtype);

  // A fresh DLPack capsule over the same memory per call (a consumer owns and
  // frees what it takes), each holding the slot.
  py::object dlpack(const py::object& stream, const py::object& max_version, const py::object& dl_device,
                    const py::object& copy) const;

  // Row 0 of this array cut to its first `rows` rows: a Python sequence's
  // batch, which the runtime carries as one sample of shape [max rows, ...].
  Array first_row(std::int64_t rows) const;

  py::tuple shape() const;
  int ndim() const { return static_cast<int>(shape_->size()); }
  std::int64_t length() const { return shape_->empty() ? 0 : (*shape_)[0]; }
  std::size_t nbytes() const;
  const std::string& name() const { return name_; }
  const std::string& dtype() const { return dtype_; }
  std::uintptr_t data_ptr() const;
  // NumPy's array interface (version 3) over the same memory, so that
  // numpy.asarray(array) is a view that keeps this Array, and the slot, alive.
  py::dict array_interface() const;

 private:
  std::shared_ptr<TensorOwner> owner_;
  std::string name_;
  std::string dtype_;
  std::shared_ptr<const std::vector<std::int64_t>> shape_, strides_;
  std::uint64_t byte_offset_ = 0;
};

class PyBatch {
 public:
  explicit PyBatch(sluice::Batch batch) : batch_(std::move(batch)) {}

  // Throws Error once released.
  const sluice::Batch& get() const;
  Array array(std::size_t i) const;
  std::optional<std::size_t> find(std::string_view name) const;
  Array item(std::string_view name) const;  // throws Error naming the fields there are
  std::vector<std::string> keys() const;
  py::list items() const;
  py::array_t<std::uint64_t> sample_ids() const;
  void release() { batch_.release(); }
  bool released() const { return !batch_; }

 private:
  sluice::Batch batch_;
};

// Adds Array and Batch to the module.
void bind_batch(py::module_& m);

}  // namespace sluice::python
