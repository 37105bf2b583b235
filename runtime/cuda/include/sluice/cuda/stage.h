// sluice/cuda/stage.h: batches from a Loader, copied to a GPU ahead of the trainer.
//
// A Stage runs in the trainer's process. It registers the Loader's arena as
// pinned memory (cudaHostRegister) once, so each field of a batch reaches the
// device with a single cudaMemcpyAsync from its slot: no bounce buffer and no
// extra host copy. A thread of the Stage pulls batches from the Loader and
// copies each into a free buffer of a ring of `depth` device buffers, on a
// copy stream of its own, followed by the optional Normalize kernels and an
// event. The trainer takes the staged batches in Loader order:
//
//   sluice::Loader loader(options);
//   sluice::cuda::StageOptions so;
//   so.device = "cuda:0";
//   so.consumer_stream = my_stream;
//   sluice::cuda::Stage stage(loader, so);
//   while (auto batch = stage.next()) train(*batch, my_stream);  // pull
//   stage.run([&](sluice::cuda::DeviceBatch& b) { train(b, my_stream); });  // push
//
// Ordering: the copy of batch k+1 runs while the trainer works on batch k.
// Reuse of a buffer is guarded on the device (see device_batch.h), so neither
// the Stage nor the trainer blocks on the GPU to recycle one. A host slot is
// given back to the Loader as soon as its copy has completed; before pulling
// another batch the Stage holds at most (Loader slots - 1) host slots, waiting
// for the oldest copy otherwise, so the Loader can always make progress.
//
// No GPU: device = "cuda" or "cuda:N" throws Error from the constructor;
// device = "auto" delivers the batches in host memory (the host backend) and
// says so in note().
//
// Lifetime: the Loader must outlive the Stage. Destroying a Stage before the
// Loader's run is over interrupts the Loader (Loader::interrupt): the batches
// the Stage pulled and never delivered are lost to it. DeviceBatches may
// outlive the Stage.
//
// Errors: every method reports failure by throwing Error. A failure of the
// Loader (a worker error) or of the device reaches next() after the batches
// staged before it were delivered.
//
// Thread safety: next() and run() must be called from one thread at a time;
// DeviceBatches may be released on any thread; stats(), note() and device()
// may be called from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "sluice/cuda/backend.h"
#include "sluice/cuda/device_batch.h"
#include "sluice/cuda/stage_options.h"

namespace sluice {
class Loader;
}

namespace sluice::cuda {

namespace detail {
class StageCore;
}

struct StageStats {
  std::uint64_t batches_delivered = 0;
  std::uint64_t bytes_staged = 0;     // bytes copied host to device (before finishing)
  std::uint64_t consumer_wait_ns = 0; // time next() spent blocked waiting for a staged batch
  std::uint64_t consumer_waits = 0;   // next() calls that had to block
};

class Stage {
 public:
  // Resolves options.device and builds the backend for it. Throws Error.
  Stage(Loader& loader, StageOptions options);
  // Stages on the given backend; options.device is ignored. Throws Error.
  Stage(Loader& loader, StageOptions options, std::shared_ptr<Backend> backend);
  // Stops the stage's thread, waits for the copies in flight, returns every
  // host slot and unregisters the arena. Never throws.
  ~Stage();
  Stage(const Stage&) = delete;
  Stage& operator=(const Stage&) = delete;

  // The next staged batch, in Loader order, or nullopt once the Loader's run
  // is over. Blocks while none is staged. Throws Error when every buffer of
  // the ring is held by the trainer (release one, or raise depth), and when
  // the Loader or the device failed.
  std::optional<DeviceBatch> next();

  // Push style: calls fn for every remaining batch; each batch is released
  // when fn returns unless fn moved it out.
  void run(const std::function<void(DeviceBatch&)>& fn);

  DeviceSpec device() const;
  // Non-empty when device = "auto" fell back to host memory: why.
  const std::string& note() const;
  StageStats stats() const;

 private:
  std::unique_ptr<detail::StageCore> core_;
};

}  // namespace sluice::cuda
