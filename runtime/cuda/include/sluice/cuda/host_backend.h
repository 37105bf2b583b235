// sluice/cuda/host_backend.h: the Backend in host memory.
//
// "Device" buffers are ordinary host memory, copies are memcpy, and each
// stream is a real thread that runs its queue of work in order. An event
// holds the latest of a series of one-shot signals (a flag under a mutex with a
// condition variable): record() queues the setting of a fresh signal on the
// stream, wait() queues a wait for the signal captured at the time of the
// call, so the ordering guarantees are those of CUDA streams and events (see
// backend.h). The null stream is the calling thread.
//
// Uses: device = "cpu", device = "auto" on a machine without a GPU (the
// consumer then receives its batches in host memory, one memcpy away from the
// arena), and tests of the staging logic on machines without a GPU. It makes
// no claim about GPU timing.
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <cstdint>
#include <functional>

#include "sluice/cuda/backend.h"

namespace sluice::cuda {

class HostBackend final : public Backend {
 public:
  HostBackend() = default;
  ~HostBackend() override = default;

  DeviceSpec device() const override { return {DeviceKind::cpu, 0}; }
  void bind_thread() override {}

  void* allocate(std::size_t bytes) override;
  void deallocate(void* p) noexcept override;
  void register_host(std::span<std::byte>) override {}
  void unregister_host(std::span<std::byte>) noexcept override {}

  StreamHandle create_stream() override;
  void destroy_stream(StreamHandle stream) noexcept override;
  EventHandle create_event() override;
  void destroy_event(EventHandle event) noexcept override;

  void copy_async(void* dst, const void* src, std::size_t bytes, StreamHandle stream) override;
  void normalize_async(const NormalizeJob& job, StreamHandle stream) override;

  void record(EventHandle event, StreamHandle stream) override;
  void wait(StreamHandle stream, EventHandle event) override;
  bool query(EventHandle event) override;
  void synchronize(EventHandle event) override;

  // Queues fn on the stream (runs it now on the null stream): the host
  // backend's counterpart of a kernel launch, e.g. a trainer step that reads a
  // staged batch. fn must not throw.
  void enqueue(StreamHandle stream, std::function<void()> fn);
};

// Runs a NormalizeJob on the calling thread: the host backend's kernel, and
// the reference the CUDA kernel is tested against.
void normalize_on_host(const NormalizeJob& job);

}  // namespace sluice::cuda
