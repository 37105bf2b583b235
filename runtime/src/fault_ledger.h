// fault_ledger.h: the fault policy's bookkeeping, apart from the processes.
//
// Contract. A FaultLedger is told, as plain data, what went wrong with a
// batch (a producer threw, or the worker making it died: crashed, was killed,
// or was killed by the watchdog for a timeout) and what went right (a batch
// completed), and answers what the run must do:
//   - retry: fill the batch again, as it is;
//   - skip:  drop `samples` (each for `reason`), then fill the batch again;
//   - fail:  stop the run with the error `reason`.
// It never touches a process, the arena or a slot; the caller (LoaderCore,
// fault_policy.cpp) gathers the facts and applies the decision.
//
// The policy. A producer that throws is deterministic, so on_error applies at
// once to the sample it named (or to its whole batch when it named none). A
// death is retried: the sample the worker was making (or its batch, when no
// sample was named) is blamed, and when one is blamed max_retries times in a
// row it gets on_error. A completed batch clears the counts of its batch and
// its samples, so kills from outside spread over a long run never add up
// against a sample. Any completion, even a failed fill, proves the workers
// make progress; more than workers x (max_retries + 1) + 2 deaths without one
// fail the run whatever on_error says.
//
// Thread safety: none; LoaderCore uses it on the consumer's thread only.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "sluice/options.h"

namespace sluice::detail {

// The batch a fault hit, as far as the parent knows it.
struct FaultBatch {
  std::uint64_t seq = 0;
  std::string description;                 // "epoch 0, batch 3 (samples 24 to 31)"
  std::span<const std::uint64_t> samples;  // its samples; read during the call only
  // The sample the worker named, as an index into samples; one out of range
  // names none.
  std::optional<std::uint32_t> position;
};

// A producer threw while filling `batch`.
struct FillFailure {
  std::uint32_t worker = 0;
  FaultBatch batch;
  std::string error;  // the producer's message
};

// A worker died (a timeout is a death: the watchdog kills the worker).
struct WorkerDeath {
  std::uint32_t worker = 0;
  int pid = 0;
  std::string why;                  // "killed by signal 9 (Killed)", "timed out after ..."
  std::optional<FaultBatch> batch;  // the batch it was filling, if any
};

struct FaultDecision {
  enum class Action : std::uint8_t { retry, skip, fail };
  Action action = Action::retry;
  std::vector<std::uint64_t> samples;  // skip: the samples to drop
  std::string reason;                  // skip: why they are dropped; fail: the run's error
};

class FaultLedger {
 public:
  // Reads options.max_retries and options.on_error; `workers` is how many
  // workers the run may have at once.
  FaultLedger(const Options& options, std::uint32_t workers);

  // A batch completed: its workers make progress, and it and its samples
  // (those known; may be empty) start again from no failures.
  void batch_done(std::uint64_t seq, std::span<const std::uint64_t> samples);
  // A producer threw: skip, or fail (never retry).
  FaultDecision fill_failed(const FillFailure& failure);
  // A worker died: retry, skip or fail.
  FaultDecision worker_died(const WorkerDeath& death);

  // Failures in a row: of a sample, of a batch (when no sample was named), and
  // deaths since the last completion.
  std::uint32_t sample_failures(std::uint64_t sample) const;
  std::uint32_t batch_failures(std::uint64_t seq) const;
  std::uint32_t deaths_since_progress() const { return deaths_since_progress_; }

 private:
  std::uint32_t max_retries_;
  OnError on_error_;
  std::uint32_t workers_;
  std::unordered_map<std::uint64_t, std::uint32_t> sample_failures_;
  std::unordered_map<std::uint64_t, std::uint32_t> batch_failures_;  // when no sample was named
  std::uint32_t deaths_since_progress_ = 0;
};

}  // namespace sluice::detail
