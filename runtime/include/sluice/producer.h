// sluice/producer.h: the code that fills batches, run inside worker processes.
//
// A Producer is handed to the Loader in Options. The Loader forks its workers
// with the Producer already in their memory (fork, not exec), so a Producer may
// capture any state, but every worker has its own copy: nothing a worker writes
// to its Producer is seen by the parent or by other workers.
//
// Each worker calls start_worker() once, then fill() for each batch it is
// given. fill() writes each field of each sample straight into the batch's slot
// in shared memory: that write is the only copy a batch ever gets. To copy
// bytes already at hand (a record read from a file), use copy_to_batch()
// from sluice/batch_copy.h: streaming stores, fenced once after fill().
//
// Errors: throw any std::exception from start_worker() or fill(). The worker
// catches it and the Options::on_error policy applies to the sample being made
// (see BatchContext::begin_sample): with "fail", the consumer's Loader::next()
// throws sluice::Error with the message, the sample, worker, epoch and batch.
// Exceptions never cross a process. A producer must be deterministic: a batch
// may be filled again after a worker crash, and must come out the same.
#pragma once

#include "sluice/export.h"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>

#include "sluice/options.h"

namespace sluice {

class EpochPlan;

// One batch being filled. Valid only during the fill() call that receives it.
class SLUICE_API BatchContext {
 public:
  std::uint64_t epoch() const { return epoch_; }
  std::uint64_t batch_index() const { return batch_; }  // within the epoch
  std::uint32_t worker_id() const { return worker_; }

  // Dataset indices of this batch's samples, in batch order (size() <= batch_size).
  std::span<const std::uint64_t> samples() const { return samples_; }
  std::size_t size() const { return samples_.size(); }

  std::size_t field_count() const { return fields_.size(); }
  const FieldSpec& field(std::size_t f) const { return fields_[f]; }
  std::size_t sample_bytes(std::size_t f) const { return sample_bytes_[f]; }

  // Field f for the whole batch: size() * sample_bytes(f) bytes, C order.
  std::byte* data(std::size_t f) const { return base_ + offsets_[f]; }
  // Field f of the batch's j-th sample.
  std::byte* data(std::size_t f, std::size_t j) const { return data(f) + j * sample_bytes_[f]; }
  template <typename T>
  T* as(std::size_t f, std::size_t j = 0) const { return reinterpret_cast<T*>(data(f, j)); }

  // Tells the runtime that sample j is being made now, so that a crash, hang
  // or exception is blamed on that sample rather than on the whole batch.
  // Cheap (one relaxed store); per_sample() calls it for you.
  void begin_sample(std::size_t j) const {
    if (progress_) progress_->store(static_cast<std::uint32_t>(j), std::memory_order_relaxed);
  }

  // For the runtime and for tests that drive a Producer directly.
  BatchContext(std::uint64_t epoch, std::uint64_t batch, std::uint32_t worker,
               std::span<const std::uint64_t> samples, std::span<const FieldSpec> fields,
               std::span<const std::size_t> sample_bytes, std::span<const std::uint64_t> offsets,
               std::byte* base, std::atomic<std::uint32_t>* progress = nullptr)
      : epoch_(epoch), batch_(batch), worker_(worker), samples_(samples), fields_(fields),
        sample_bytes_(sample_bytes), offsets_(offsets), base_(base), progress_(progress) {}

 private:
  std::uint64_t epoch_, batch_;
  std::uint32_t worker_;
  std::span<const std::uint64_t> samples_;
  std::span<const FieldSpec> fields_;
  std::span<const std::size_t> sample_bytes_;
  std::span<const std::uint64_t> offsets_;
  std::byte* base_;
  std::atomic<std::uint32_t>* progress_;
};

class SLUICE_API Producer {
 public:
  virtual ~Producer() = default;
  // Once per worker process, after fork and before its first fill().
  virtual void start_worker(std::uint32_t /*worker_id*/) {}
  // Once per worker, after start_worker() and before the first upcoming():
  // the plan every batch's samples come from (sluice/plan.h), valid for the
  // worker's life. For a producer that prepares further ahead than the
  // batches announced to it (remote shards fetched by the plan's order):
  // the worker's batches are among the batches that follow, in seq order,
  // the last one announced, and come before `end_seq` (epoch * batches per
  // epoch + batch; the run's end: UINT64_MAX when it runs until stopped).
  virtual void look_ahead(const EpochPlan& /*plan*/, std::uint64_t /*end_seq*/) {}
  // Write every field of every sample of the batch.
  virtual void fill(BatchContext& batch) = 0;
  // Announces a batch this worker will fill later, in fill order, as soon as
  // the worker is given it (possibly several batches ahead). A producer that
  // reads files starts their reads here, so the I/O of later batches overlaps
  // the work on the current one. `samples` is valid during the call only.
  // Advisory: the batch may end up filled by another worker after a crash,
  // and samples skipped by on_error may be missing from the fill.
  virtual void upcoming(std::uint64_t /*epoch*/, std::uint64_t /*batch*/,
                        std::span<const std::uint64_t> /*samples*/) {}
};

// One sample of a batch being filled, for per-sample producers.
struct SLUICE_API SampleRef {
  const BatchContext& batch;
  std::size_t position;  // j: the sample's row in the batch
  std::uint64_t index;   // its dataset index
  std::byte* data(std::size_t f) const { return batch.data(f, position); }
  template <typename T>
  T* as(std::size_t f) const { return batch.as<T>(f, position); }
};

// A Producer that calls fn once per sample, in batch order.
SLUICE_API std::shared_ptr<Producer> per_sample(std::function<void(const SampleRef&)> fn);

}  // namespace sluice
