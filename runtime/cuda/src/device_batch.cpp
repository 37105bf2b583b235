#include "sluice/cuda/device_batch.h"

#include "sluice/dlpack.h"

#include <string>

#include "buffer_lease.h"
#include "sluice/error.h"

namespace sluice::cuda {

using detail::BufferLease;

namespace {

const BufferLease& checked(const std::shared_ptr<BufferLease>& lease) {
  if (!lease) throw Error("use of an empty or released DeviceBatch");
  return *lease;
}

}  // namespace

std::uint64_t DeviceBatch::epoch() const { return checked(lease_).entry().epoch; }
std::uint64_t DeviceBatch::index() const { return checked(lease_).entry().index; }
std::size_t DeviceBatch::size() const { return checked(lease_).entry().sample_ids.size(); }
std::span<const std::uint64_t> DeviceBatch::sample_ids() const { return checked(lease_).entry().sample_ids; }
std::size_t DeviceBatch::field_count() const { return checked(lease_).entry().fields.size(); }

DeviceField DeviceBatch::field(std::size_t i) const {
  const BufferLease& lease = checked(lease_);
  const auto& fields = lease.entry().fields;
  if (i >= fields.size()) {
    throw Error("field index " + std::to_string(i) + " out of range: the batch has " +
                std::to_string(fields.size()) + " fields");
  }
  const detail::StagedField& spec = lease.ring().layout().fields[i];
  const detail::StagedFieldView& v = fields[i];
  DeviceField f;
  f.name = spec.name;
  f.dtype = spec.out_dtype;
  f.shape = {v.shape, v.ndim};
  f.strides = {v.strides, v.ndim};
  f.data = v.data;
  f.nbytes = v.nbytes;
  return f;
}

DeviceField DeviceBatch::field(std::string_view name) const {
  const auto& specs = checked(lease_).ring().layout().fields;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    if (specs[i].name == name) return field(i);
  }
  throw Error("the batch has no field named '" + std::string(name) + "'");
}

DeviceSpec DeviceBatch::device() const { return checked(lease_).ring().backend().device(); }
StreamHandle DeviceBatch::stream() const { return checked(lease_).reader(); }
EventHandle DeviceBatch::ready_event() const { return checked(lease_).entry().ready; }

DLManagedTensor* DeviceBatch::to_dlpack(std::size_t i) const {
  const DeviceField f = field(i);
  const DeviceSpec where = device();
  auto* t = new DLManagedTensor{};
  t->dl_tensor.data = f.data;
  t->dl_tensor.device = where.kind == DeviceKind::cuda ? DLDevice{kDLCUDA, where.ordinal} : DLDevice{kDLCPU, 0};
  t->dl_tensor.ndim = static_cast<std::int32_t>(f.shape.size());
  t->dl_tensor.dtype = to_dlpack_dtype(f.dtype);
  // The shape and strides live in the ring entry, which the lease keeps.
  t->dl_tensor.shape = const_cast<std::int64_t*>(f.shape.data());
  t->dl_tensor.strides = const_cast<std::int64_t*>(f.strides.data());
  t->dl_tensor.byte_offset = 0;
  t->manager_ctx = new std::shared_ptr<BufferLease>(lease_);
  t->deleter = [](DLManagedTensor* self) {
    delete static_cast<std::shared_ptr<BufferLease>*>(self->manager_ctx);
    delete self;
  };
  return t;
}

}  // namespace sluice::cuda
