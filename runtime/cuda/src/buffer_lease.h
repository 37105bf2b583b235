// buffer_lease.h: a consumer's hold on one ring entry. Shared by a
// DeviceBatch and the DLPack tensors exported from it; the last owner to let
// go recycles the entry, guarded by the reader stream.
#pragma once

#include <cstddef>
#include <memory>

#include "staging_ring.h"

namespace sluice::cuda::detail {

class BufferLease {
 public:
  BufferLease(std::shared_ptr<StagingRing> ring, std::size_t entry, StreamHandle reader)
      : ring_(std::move(ring)), entry_(entry), reader_(reader) {
    ring_->mark_delivered(entry_);
  }
  ~BufferLease() { ring_->recycle(entry_, reader_); }
  BufferLease(const BufferLease&) = delete;
  BufferLease& operator=(const BufferLease&) = delete;

  const StagingRing& ring() const { return *ring_; }
  const RingEntry& entry() const { return ring_->entry(entry_); }
  StreamHandle reader() const { return reader_; }

 private:
  std::shared_ptr<StagingRing> ring_;
  std::size_t entry_;
  StreamHandle reader_;
};

}  // namespace sluice::cuda::detail
