// sluice/cuda/device_batch.h: a batch staged in device memory.
//
// A DeviceBatch owns one buffer of the Stage's ring until it is destroyed or
// release()d; its DeviceFields point into that buffer (device memory on the
// CUDA backend, host memory on the host backend). Releasing hands the buffer
// back for reuse, but the stage writes it again only after the work submitted
// to the consumer stream (StageOptions::consumer_stream) before the release
// has run: an event recorded on that stream at release time guards the reuse.
// A trainer that reads the batch on another stream must order that stream
// before the consumer stream, or before release.
//
// The batch's data is ready on the consumer stream: work submitted to it after
// Stage::next() returned sees the copied bytes. Other streams must wait on
// ready_event() first.
//
// A DeviceBatch may outlive its Stage (its buffer stays allocated until it is
// released).
//
// Thread safety: a DeviceBatch may be moved to, read from and destroyed on any
// thread (one at a time); releasing batches from several threads is safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <utility>

#include "sluice/cuda/backend.h"
#include "sluice/dtype.h"

struct DLManagedTensor;

namespace sluice::cuda {

namespace detail {
class BufferLease;
}

struct DeviceField {
  std::string_view name;
  DType dtype = DType::u8;
  std::span<const std::int64_t> shape;    // [batch length, per-sample shape...]
  std::span<const std::int64_t> strides;  // in elements, C order
  void* data = nullptr;                   // device memory on the CUDA backend
  std::size_t nbytes = 0;

  template <typename T>
  T* as() const { return static_cast<T*>(data); }
};

class DeviceBatch {
 public:
  DeviceBatch() = default;
  DeviceBatch(DeviceBatch&&) noexcept = default;
  DeviceBatch& operator=(DeviceBatch&&) noexcept = default;
  ~DeviceBatch() = default;

  explicit operator bool() const { return lease_ != nullptr; }
  std::uint64_t epoch() const;
  std::uint64_t index() const;  // batch index within the epoch
  std::size_t size() const;     // samples in this batch
  std::span<const std::uint64_t> sample_ids() const;  // host memory

  std::size_t field_count() const;
  DeviceField field(std::size_t i) const;
  DeviceField field(std::string_view name) const;  // throws Error if absent

  DeviceSpec device() const;
  StreamHandle stream() const;      // the consumer stream the batch is ready on
  EventHandle ready_event() const;  // completes when the batch's copy and finishing have run

  // A DLPack tensor over field i (kDLCUDA with the device number on the CUDA
  // backend, kDLCPU on the host backend). It keeps the buffer from reuse until
  // its deleter is called, as a DeviceBatch does. The caller owns the result.
  DLManagedTensor* to_dlpack(std::size_t i) const;

  // Hands the buffer back now (see above); the batch and its fields become invalid.
  void release() { lease_.reset(); }

  explicit DeviceBatch(std::shared_ptr<detail::BufferLease> lease) : lease_(std::move(lease)) {}

 private:
  std::shared_ptr<detail::BufferLease> lease_;
};

}  // namespace sluice::cuda
