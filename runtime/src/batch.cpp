#include "sluice/batch.h"

#include "sluice/dlpack.h"

#include <cstring>
#include <string>

#include "loader_core.h"
#include "sluice/error.h"

namespace sluice {

using detail::SlotLease;

namespace {

const SlotLease& checked(const std::shared_ptr<SlotLease>& lease) {
  if (!lease) throw Error("use of an empty or released Batch");
  return *lease;
}

}  // namespace

std::uint64_t Batch::epoch() const { return checked(lease_).header().epoch; }
std::uint64_t Batch::index() const { return checked(lease_).header().batch; }
std::size_t Batch::size() const { return checked(lease_).header().size; }

std::span<const std::uint64_t> Batch::sample_ids() const {
  const SlotLease& l = checked(lease_);
  return {reinterpret_cast<const std::uint64_t*>(l.base() + l.header().ids_offset), l.header().size};
}

std::size_t Batch::field_count() const { return checked(lease_).header().field_count; }

FieldView Batch::field(std::size_t i) const {
  const SlotLease& l = checked(lease_);
  const detail::BatchHeader& h = l.header();
  if (i >= h.field_count) {
    throw Error("field index " + std::to_string(i) + " out of range: the batch has " +
                std::to_string(h.field_count) + " fields");
  }
  const detail::FieldDesc& d = h.fields[i];
  FieldView v;
  v.name = std::string_view(d.name);
  v.dtype = static_cast<DType>(d.dtype);
  v.shape = {d.shape, d.ndim};
  v.strides = {d.strides, d.ndim};
  v.data = l.base() + d.offset;
  v.nbytes = d.nbytes;
  return v;
}

std::span<const std::byte> field_bytes(const FieldView& field, std::size_t row) {
  if (field.dtype != DType::u8 || field.shape.size() != 2 || field.shape[1] < 8 ||
      row >= static_cast<std::size_t>(field.shape[0]))
    throw Error("field '" + std::string(field.name) + "' is not a bytes field with a row " + std::to_string(row));
  const std::size_t width = static_cast<std::size_t>(field.shape[1]);
  const auto* p = static_cast<const std::byte*>(field.data) + row * width;
  std::uint64_t length;
  std::memcpy(&length, p, 8);
  if (length > width - 8)
    throw Error("field '" + std::string(field.name) + "', row " + std::to_string(row) + ": length " +
                std::to_string(length) + " is more than its row holds (" + std::to_string(width - 8) + ")");
  return {p + 8, static_cast<std::size_t>(length)};
}

FieldView Batch::field(std::string_view name) const {
  const detail::BatchHeader& h = checked(lease_).header();
  for (std::size_t i = 0; i < h.field_count; ++i) {
    if (name == h.fields[i].name) return field(i);
  }
  throw Error("the batch has no field named '" + std::string(name) + "'");
}

DLManagedTensor* Batch::to_dlpack(std::size_t i) const {
  FieldView v = field(i);
  auto* t = new DLManagedTensor{};
  t->dl_tensor.data = v.data;
  t->dl_tensor.device = {kDLCPU, 0};
  t->dl_tensor.ndim = static_cast<std::int32_t>(v.shape.size());
  t->dl_tensor.dtype = to_dlpack_dtype(v.dtype);
  // The shape and strides live in the lease's private copy of the header.
  t->dl_tensor.shape = const_cast<std::int64_t*>(v.shape.data());
  t->dl_tensor.strides = const_cast<std::int64_t*>(v.strides.data());
  t->dl_tensor.byte_offset = 0;
  t->manager_ctx = new std::shared_ptr<SlotLease>(lease_);
  t->deleter = [](DLManagedTensor* self) {
    delete static_cast<std::shared_ptr<SlotLease>*>(self->manager_ctx);
    delete self;
  };
  return t;
}

}  // namespace sluice
