// sluice/cuda/backend.h: the device operations the stage is built on.
//
// The staging logic (buffer ring, ordering, event-guarded reuse) talks to a
// device only through this interface, which follows the CUDA model: streams
// run their work in submission order; an event, when recorded on a stream,
// captures the work submitted to that stream so far and completes when that
// work has run; a stream told to wait on an event runs nothing submitted
// afterwards until the event completes. An event never recorded counts as
// complete.
//
// Two implementations:
//   make_cuda_backend(N)  CUDA device N (cuda_backend.h): cudaMalloc'd buffers,
//                         cudaHostRegister, cudaMemcpyAsync, CUDA streams and events.
//   HostBackend           host memory, memcpy, one thread per stream, events
//                         made of promises (host_backend.h). It is what
//                         device = "cpu" and a GPU-less "auto" deliver with, and
//                         what the staging logic is tested on where no GPU exists.
//
// Handles: on the CUDA backend a StreamHandle is a cudaStream_t and an
// EventHandle a cudaEvent_t (static_cast them); on the host backend they are
// that backend's own objects. A null StreamHandle is the CUDA legacy default
// stream of the backend's device, or, on the host backend, the calling thread
// (work on it runs before the call returns).
//
// Errors: every method that can fail throws Error naming the operation (for
// CUDA, the runtime call and its error). The destroy/deallocate/unregister
// methods never throw: they are called from destructors, possibly while the
// CUDA runtime is unloading at process exit, and ignore failures.
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <cstddef>
#include <span>

#include "sluice/cuda/device.h"
#include "sluice/cuda/normalize_job.h"

namespace sluice::cuda {

using StreamHandle = void*;
using EventHandle = void*;

class Backend {
 public:
  virtual ~Backend() = default;

  virtual DeviceSpec device() const = 0;

  // Makes this backend's device current on the calling thread (cudaSetDevice).
  virtual void bind_thread() = 0;

  // Device memory, aligned to at least 256 bytes.
  virtual void* allocate(std::size_t bytes) = 0;
  virtual void deallocate(void* p) noexcept = 0;

  // Pins host memory so copies from it run without a bounce buffer. The range
  // must stay mapped until unregister_host.
  virtual void register_host(std::span<std::byte> memory) = 0;
  virtual void unregister_host(std::span<std::byte> memory) noexcept = 0;

  virtual StreamHandle create_stream() = 0;
  // Waits for the stream's work, then destroys it.
  virtual void destroy_stream(StreamHandle stream) noexcept = 0;
  virtual EventHandle create_event() = 0;
  virtual void destroy_event(EventHandle event) noexcept = 0;

  // Host-to-device copy, in stream order.
  virtual void copy_async(void* dst, const void* src, std::size_t bytes, StreamHandle stream) = 0;
  // Runs a NormalizeJob over device memory, in stream order.
  virtual void normalize_async(const NormalizeJob& job, StreamHandle stream) = 0;

  virtual void record(EventHandle event, StreamHandle stream) = 0;
  // Work submitted to `stream` after this call waits for `event` as recorded now.
  virtual void wait(StreamHandle stream, EventHandle event) = 0;
  // Whether the event's captured work has run. Never blocks.
  virtual bool query(EventHandle event) = 0;
  // Blocks the calling thread until the event completes.
  virtual void synchronize(EventHandle event) = 0;
};

}  // namespace sluice::cuda
