// The fault policy applied: what a crash, a hang or a throw in a worker means
// for the batch and the sample it was making. The ledger (fault_ledger.h)
// counts the failures and decides retry, skip or fail; this file gathers what
// it needs from the slots and the worker's channel, and carries the decision
// out: skip_samples(), fail(), a fresh worker, the batches filled again.
//
// Everything read from a slot's header is untrusted: a producer may have
// scribbled on it. trusted_header() checks what is used before it is used.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "loader_core.h"
#include "sluice/error.h"
#include "worker.h"

namespace sluice::detail {

namespace {

// The worker's message, even if the producer overwrote its terminating NUL.
std::string bounded(const char* text, std::size_t capacity) { return std::string(text, strnlen(text, capacity)); }

}  // namespace

const SlotHeader* LoaderCore::trusted_header(std::uint32_t slot, std::uint64_t seq) const {
  const auto* h = reinterpret_cast<const SlotHeader*>(slot_base(*arena_, layout_, slot));
  if (h->seq != seq || h->size > options_.batch_size || h->ids_offset != layout_.ids_offset) return nullptr;
  return h;
}

const std::uint64_t* LoaderCore::slot_ids(std::uint32_t slot) const {
  return reinterpret_cast<const std::uint64_t*>(slot_base(*arena_, layout_, slot) + layout_.ids_offset);
}

// A batch's samples by the plan, less those skipped: what a worker fills,
// known without reading its slot (which it may not have written yet).
std::vector<std::uint64_t> LoaderCore::planned_ids(std::uint64_t seq) const {
  const std::uint64_t per_epoch = plan_.batches_per_epoch();
  std::vector<std::uint64_t> ids(plan_.batch_length(seq % per_epoch));
  plan_.batch_samples(seq / per_epoch, seq % per_epoch, ids);
  const std::vector<std::uint64_t>& skipped = stats_.skipped_samples;
  std::erase_if(ids, [&](std::uint64_t id) { return std::find(skipped.begin(), skipped.end(), id) != skipped.end(); });
  return ids;
}

// The samples of batch `seq` in `slot`: the slot's own ids while its header
// is intact, else the plan's.
std::vector<std::uint64_t> LoaderCore::batch_ids(std::uint64_t seq, std::uint32_t slot) const {
  if (const SlotHeader* h = trusted_header(slot, seq)) return {slot_ids(slot), slot_ids(slot) + h->size};
  return planned_ids(seq);
}

std::string LoaderCore::describe_batch(std::uint64_t seq, std::uint32_t slot) const {
  const std::uint64_t per_epoch = plan_.batches_per_epoch();
  std::string text = "epoch " + std::to_string(seq / per_epoch) + ", batch " + std::to_string(seq % per_epoch);
  const std::vector<std::uint64_t> samples = batch_ids(seq, slot);
  if (!samples.empty()) {
    // A run of consecutive ids as "samples 8 to 15"; a shuffled batch by its
    // ids, the first 8 of them: "samples 10, 5, 3, 9".
    const std::uint64_t* ids = samples.data();
    const std::uint32_t n = static_cast<std::uint32_t>(samples.size());
    bool run = true;
    for (std::uint32_t i = 1; run && i < n; ++i) run = ids[i] == ids[0] + i;
    text += " (samples " + std::to_string(ids[0]);
    if (run && n > 1) {
      text += " to " + std::to_string(ids[n - 1]);
    } else {
      constexpr std::uint32_t kShown = 8;
      for (std::uint32_t i = 1; i < std::min(n, kShown); ++i) text += ", " + std::to_string(ids[i]);
      if (n > kShown) text += ", ... " + std::to_string(n) + " in all";
    }
    text += ")";
  }
  return text;
}

void LoaderCore::on_batch_done(std::uint32_t slot) {
  const std::uint64_t seq = slots_.seq(slot);
  const SlotHeader* h = trusted_header(slot, seq);
  faults_.batch_done(seq, h ? std::span<const std::uint64_t>(slot_ids(slot), h->size)
                            : std::span<const std::uint64_t>());
}

void LoaderCore::apply(const FaultDecision& decision) {
  if (decision.action == FaultDecision::Action::fail) fail(decision.reason);
  if (decision.action == FaultDecision::Action::skip) skip_samples(decision.samples, decision.reason);
}

// The producer threw: the ledger skips what it named, or fails the run; the
// batch is filled again without it.
void LoaderCore::on_fill_failed(std::uint32_t w, const Completion& c) {
  const SlotHeader* h = trusted_header(c.slot, c.seq);
  if (!h) {
    fail("worker " + std::to_string(w) + " failed on " + describe_batch(c.seq, c.slot) +
         ", and the header of its slot was overwritten: a producer wrote outside its fields");
  }
  FillFailure failure;
  failure.worker = w;
  failure.batch = {c.seq, describe_batch(c.seq, c.slot), {slot_ids(c.slot), h->size}, h->failed_position};
  failure.error = bounded(h->error, sizeof h->error);
  const FaultDecision decision = faults_.fill_failed(failure);
  if (decision.action == FaultDecision::Action::fail && options_.ordered && c.seq > next_deliver_) {
    // The batches before it come first, as they would had it not failed: the
    // consumer (a checkpoint, `sluice peek`) gets every good batch there is.
    // Nothing new is issued (issue() stops) and its slot is retired: no worker
    // owes it, so a later death does not fill it again. The run fails when
    // it is due (failure_due).
    if (!deferred_failure_ || c.seq < deferred_failure_->seq) deferred_failure_ = DeferredFailure{c.seq, decision.reason};
    slots_.retire(c.slot);
    return;
  }
  apply(decision);
  ++stats_.batches_retried;
  assign(c.slot, c.seq);
}

void LoaderCore::skip_samples(std::span<const std::uint64_t> samples, const std::string& reason) {
  SkipList& list = skip_list(*arena_, layout_);
  // The parent is the list's only writer and keeps its own count: the one in
  // shared memory is published, never read back (a worker may scribble it).
  std::size_t count = stats_.skipped_samples.size();
  for (std::uint64_t id : samples) {
    if (std::find(stats_.skipped_samples.begin(), stats_.skipped_samples.end(), id) !=
        stats_.skipped_samples.end()) {
      continue;
    }
    if (count == kMaxSkipped) {
      fail("more than " + std::to_string(kMaxSkipped) + " samples failed and were skipped; the data or the "
           "pipeline is broken. The last: sample " + std::to_string(id) + ": " + reason);
    }
    list.ids[count++] = id;
    if (options_.trace) trace_mark(TraceMark::Kind::skip, monotonic_ns(), id, reason);
    stats_.skipped_samples.push_back(id);
    stats_.skip_reasons.push_back(reason);
  }
  // Publishes the new ids (see SkipList); every task pushed after this is a
  // release too, so a worker that pops it sees them.
  list.count.store(static_cast<std::uint32_t>(count), std::memory_order_release);
}

void LoaderCore::on_worker_exit(const WorkerExit& e) {
  const std::uint32_t w = e.worker;
  collect_from(w);  // completions it pushed before dying still count
  const WorkerChannel& ch = worker_channel(*arena_, layout_, w);
  ++stats_.worker_restarts;
  if (options_.trace) trace_mark(TraceMark::Kind::restart, monotonic_ns(), w, e.why);
  WorkerDeath death;
  death.worker = w;
  death.pid = e.pid;
  death.why = e.why;

  // Blame the batch it was filling, and the sample if the producer named it.
  // Relaxed is enough: the worker is dead, and its exit, the zygote's waitpid
  // and the message that told us order all its stores before these loads.
  const std::uint64_t busy = ch.busy_seq.load(std::memory_order_relaxed);
  const std::uint32_t position = ch.busy_position.load(std::memory_order_relaxed);
  std::vector<std::uint64_t> samples;
  for (std::uint32_t slot = 0; busy != kIdle && slot < layout_.slots; ++slot) {
    if (!slots_.owes(slot, w, busy)) continue;
    // A worker that died before it described the batch (announcing it to
    // the producer, say) is blamed by the plan's ids: the batch as a whole.
    const SlotHeader* h = trusted_header(slot, busy);
    samples = batch_ids(busy, slot);
    death.batch = FaultBatch{busy, describe_batch(busy, slot), samples,
                             h ? std::optional<std::uint32_t>(position) : std::nullopt};
    break;
  }
  apply(faults_.worker_died(death));

  // A fresh worker, and every batch the old one owed goes out again.
  outstanding_[w] = 0;
  try {
    supervisor_->replace(w);
  } catch (const Error& err) {
    fail(std::string("worker ") + std::to_string(w) + " (pid " + std::to_string(e.pid) + ") " + e.why +
         ", and could not be replaced: " + err.what());
  }
  const std::vector<std::pair<std::uint64_t, std::uint32_t>> owed = slots_.owed_by(w);
  for (const auto& [seq, slot] : owed) assign(slot, seq);
  stats_.batches_retried += owed.size();
  notify_workers();
}

}  // namespace sluice::detail
