// staging_ring.h: the ring of device buffers batches are staged into, and the
// rules for reusing them.
//
// Each entry holds one batch. Its life:
//
//   free --acquire--> staging --stage--> staged --(Stage delivers it)--> held
//     ^                                                                   |
//     +------------------------------ recycle ----------------------------+
//
// stage() queues on the ring's copy stream: a wait for the entry's `released`
// event (so the copy cannot overwrite a batch the consumer's stream may still
// read), one copy per field from the host batch (straight from the arena),
// the Normalize jobs, and a record of the entry's `ready` event. recycle()
// records `released` on the stream of the consumer that read the batch and
// puts the entry back on the free list. Neither blocks on the device.
//
// Host slots: the host batch a copy reads from stays with its entry until the
// entry's `ready` event completes; release_host_batches() hands completed
// ones back to the Loader, in staging order (the copy stream completes them
// in that order).
//
// Thread safety: acquire(), stage() and release_host_batches() are for one
// thread, the staging thread (or, once it has stopped, the thread that stopped
// it). recycle(), recycle_unread(), mark_delivered(), consumer_held(), close()
// and fail() may be called from any thread. An entry's contents are written by stage() only while the staging
// thread owns the entry, and read by consumers only after it was handed over
// (through a mutex: the Stage's ready queue), so they need no lock of their own.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "sluice/batch.h"
#include "sluice/cuda/backend.h"
#include "sluice/options.h"
#include "staged_layout.h"

namespace sluice::cuda::detail {

struct StagedFieldView {
  std::int64_t shape[max_sample_dims + 1] = {};
  std::int64_t strides[max_sample_dims + 1] = {};
  std::size_t ndim = 0;
  void* data = nullptr;
  std::size_t nbytes = 0;
};

struct RingEntry {
  void* buffer = nullptr;
  EventHandle ready = nullptr;     // the batch's copies and finishing have run
  EventHandle released = nullptr;  // the consumer's reads of the previous batch have run
  std::optional<Batch> host;       // the host batch, until `ready` completes
  // The staged batch, as the consumer sees it.
  std::uint64_t epoch = 0;
  std::uint64_t index = 0;
  std::vector<std::uint64_t> sample_ids;
  std::vector<StagedFieldView> fields;
};

class StagingRing {
 public:
  // Allocates `depth` buffers of layout.entry_bytes, the scratch buffer, the
  // events and the copy stream. Throws Error.
  StagingRing(std::shared_ptr<Backend> backend, StagedLayout layout, std::uint32_t depth);
  // Waits for every copy into, and every guarded read of, the buffers, then
  // frees them. Never throws.
  ~StagingRing();
  StagingRing(const StagingRing&) = delete;
  StagingRing& operator=(const StagingRing&) = delete;

  Backend& backend() const { return *backend_; }
  const StagedLayout& layout() const { return layout_; }
  std::size_t depth() const { return entries_.size(); }
  const RingEntry& entry(std::size_t e) const { return entries_[e]; }

  // --- The staging thread ---------------------------------------------------
  // A free entry, oldest freed first; blocks until one is free. nullopt once
  // closed. Throws the failure recorded by fail(), if any.
  std::optional<std::size_t> acquire();
  // Queues the copy of `host` into entry e (see above) and keeps `host` until
  // the copy has run. Returns the bytes copied. Throws Error.
  std::size_t stage(std::size_t e, Batch host);
  // Releases every host batch whose copy has run, then waits for the oldest
  // copies until at most `keep` host batches are held. Throws Error.
  void release_host_batches(std::size_t keep);

  // --- Any thread -------------------------------------------------------------
  // Entry e is now held by a consumer reading it on `reader`.
  void mark_delivered(std::size_t e);
  // Returns a delivered entry: its next copy waits for the work submitted to
  // `reader` before this call. A failure to record that guard leaves the
  // entry out of the ring and is reported by the next acquire().
  void recycle(std::size_t e, StreamHandle reader) noexcept;
  // Returns an entry no consumer has read (staged but never delivered, or
  // acquired but never staged).
  void recycle_unread(std::size_t e) noexcept;
  // Entries delivered and not yet recycled.
  std::size_t consumer_held() const;
  // Makes acquire() return nullopt from now on.
  void close();
  // Records a failure for acquire() to throw.
  void fail(std::exception_ptr error) noexcept;

 private:
  void put_free(std::size_t e, bool was_delivered) noexcept;
  void teardown() noexcept;

  std::shared_ptr<Backend> backend_;
  StagedLayout layout_;
  StreamHandle copy_stream_ = nullptr;
  void* scratch_ = nullptr;
  std::vector<RingEntry> entries_;
  std::deque<std::size_t> held_;  // entries holding a host batch, in staging order (staging thread)

  mutable std::mutex mutex_;
  std::condition_variable freed_;
  std::deque<std::size_t> free_;  // guarded by mutex_
  std::size_t consumer_held_ = 0;
  bool closed_ = false;
  std::exception_ptr error_;
};

}  // namespace sluice::cuda::detail
