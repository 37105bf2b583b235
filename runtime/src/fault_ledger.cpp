#include "fault_ledger.h"

namespace sluice::detail {

namespace {

// The named sample's id, if the batch names one of its samples.
std::optional<std::uint64_t> named_sample(const FaultBatch& b) {
  if (!b.position || *b.position >= b.samples.size()) return std::nullopt;
  return b.samples[*b.position];
}

// "sample 7 (epoch 0, batch 1 (samples 4 to 7))", or the batch alone.
std::string culprit(const FaultBatch& b, std::optional<std::uint64_t> sample) {
  return sample ? "sample " + std::to_string(*sample) + " (" + b.description + ")" : b.description;
}

FaultDecision fail(std::string message) {
  return {FaultDecision::Action::fail, {}, std::move(message)};
}

FaultDecision skip(std::vector<std::uint64_t> samples, std::string reason) {
  return {FaultDecision::Action::skip, std::move(samples), std::move(reason)};
}

}  // namespace

FaultLedger::FaultLedger(const Options& options, std::uint32_t workers)
    : max_retries_(options.max_retries), on_error_(options.on_error), workers_(workers) {}

std::uint32_t FaultLedger::sample_failures(std::uint64_t sample) const {
  auto it = sample_failures_.find(sample);
  return it == sample_failures_.end() ? 0 : it->second;
}

std::uint32_t FaultLedger::batch_failures(std::uint64_t seq) const {
  auto it = batch_failures_.find(seq);
  return it == batch_failures_.end() ? 0 : it->second;
}

void FaultLedger::batch_done(std::uint64_t seq, std::span<const std::uint64_t> samples) {
  deaths_since_progress_ = 0;
  if (!batch_failures_.empty()) batch_failures_.erase(seq);
  if (sample_failures_.empty()) return;
  for (std::uint64_t id : samples) sample_failures_.erase(id);
}

FaultDecision FaultLedger::fill_failed(const FillFailure& f) {
  deaths_since_progress_ = 0;  // the worker answered
  const FaultBatch& b = f.batch;
  const std::optional<std::uint64_t> sample = named_sample(b);
  const std::string where = culprit(b, sample);
  const std::string worker = "worker " + std::to_string(f.worker) + " failed on " + where;
  if (on_error_ == OnError::fail) return fail(worker + ": " + f.error);
  if (b.samples.empty()) {
    // Every sample was skipped already: a retry would fail the same way, forever.
    return fail(worker + ", which on_error = skip had emptied: " + f.error);
  }
  if (sample) return skip({*sample}, f.error);
  return skip({b.samples.begin(), b.samples.end()}, "its batch failed without naming a sample: " + f.error);
}

FaultDecision FaultLedger::worker_died(const WorkerDeath& d) {
  const std::string who = "worker " + std::to_string(d.worker) + " (pid " + std::to_string(d.pid) + ")";
  if (++deaths_since_progress_ > std::uint64_t{workers_} * (std::uint64_t{max_retries_} + 1) + 2) {
    return fail("workers keep dying without finishing a batch; the last, " + who + ", " + d.why);
  }
  if (!d.batch) return {};
  const FaultBatch& b = *d.batch;
  const std::optional<std::uint64_t> sample = named_sample(b);
  const std::uint32_t tries = sample ? ++sample_failures_[*sample] : ++batch_failures_[b.seq];
  if (tries < max_retries_) return {};
  const std::string what = (tries == 1 ? std::string("failed once (max_retries = 1): worker ")
                                       : "failed " + std::to_string(tries) + " times in a row; the last time worker ") +
                           std::to_string(d.worker) + " (pid " + std::to_string(d.pid) + ") " + d.why;
  if (on_error_ == OnError::fail) return fail(culprit(b, sample) + " " + what);
  if (sample) return skip({*sample}, what);
  return skip({b.samples.begin(), b.samples.end()}, "its batch (" + b.description + ") " + what);
}

}  // namespace sluice::detail
