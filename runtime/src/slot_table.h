// slot_table.h: the parent's record of what each batch slot holds.
//
// A slot moves through
//     free --take_free()+issue()--> issued --ready()--> ready --hold()--> held --free()--> free
// and may also go issued -> issued (issue() again: the batch is re-issued to
// another worker after a death or a failed fill), ready -> free (free(): a
// batch whose samples were all skipped is never handed out) and issued ->
// free (retire(): a batch that will not be filled, its failure deferred).
//
// Invariants (the caller keeps to the transitions above; they are asserted in
// debug builds):
//   - A free slot is in the free list exactly once; no other slot is, except
//     one take_free() just handed out and not yet issue()d.
//   - An issued slot has the sequence number of the batch it is filled with
//     and the worker that owes it (seq(), worker()); a ready or held slot
//     keeps its batch's seq.
//   - A ready slot sits in the ready index until take_ready() or
//     take_ready_in_epoch() hands it out, after which the caller hold()s or
//     free()s it. Ordered, the index is a window of ready_window() entries
//     indexed by seq % ready_window(): the caller keeps every batch issued
//     but not yet handed out within one window's span of sequence numbers, so
//     no two collide. Unordered, it is a list in completion order.
//   - free_count() + count(issued) + count(ready) + count(held) is size(),
//     once take_free()'s slot is issued.
//
// It knows nothing of workers' processes, the arena or the plan: plain data.
// Thread safety: none; LoaderCore uses it on the consumer's thread only.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace sluice::detail {

class SlotTable {
 public:
  enum class State : std::uint8_t { free, issued, ready, held };

  // `slots` free slots; take_free() hands out slot 0 first. `ordered`: the
  // ready index is by sequence number (take_ready), else in completion order
  // (take_ready_in_epoch).
  SlotTable(std::uint32_t slots, bool ordered);

  std::uint32_t size() const { return static_cast<std::uint32_t>(state_.size()); }
  State state(std::uint32_t slot) const { return state_[slot]; }
  std::uint64_t seq(std::uint32_t slot) const { return seq_[slot]; }
  std::uint32_t worker(std::uint32_t slot) const { return worker_[slot]; }
  std::uint32_t count(State state) const;
  std::uint32_t free_count() const { return static_cast<std::uint32_t>(free_.size()); }
  // `slot` is a slot that `worker` is filling with batch `seq` (any slot
  // number is accepted: a completion read from shared memory is untrusted).
  bool owes(std::uint32_t slot, std::uint32_t worker, std::uint64_t seq) const;
  // The slots `worker` is filling, as (seq, slot) by increasing seq.
  std::vector<std::pair<std::uint64_t, std::uint32_t>> owed_by(std::uint32_t worker) const;

  // Removes the most recently freed slot from the free list; its state stays
  // free until issue(). Requires free_count() > 0.
  std::uint32_t take_free();
  // Free (just taken) or issued -> issued: `worker` now fills batch `seq` in it.
  void issue(std::uint32_t slot, std::uint64_t seq, std::uint32_t worker);
  // Issued -> ready: its batch is filled; it joins the ready index.
  void ready(std::uint32_t slot);
  // Ordered: the ready slot of batch `seq`, taken from the index; nullopt if
  // that batch is not ready. ready_at() only looks.
  std::optional<std::uint32_t> take_ready(std::uint64_t seq);
  bool ready_at(std::uint64_t seq) const;
  // Unordered: the first ready slot in completion order whose batch is of
  // `epoch` (seq / per_epoch), taken from the list. any_ready_in_epoch() only looks.
  std::optional<std::uint32_t> take_ready_in_epoch(std::uint64_t epoch, std::uint64_t per_epoch);
  bool any_ready_in_epoch(std::uint64_t epoch, std::uint64_t per_epoch) const;
  // Ready (taken from the index) -> held: the consumer has its batch.
  void hold(std::uint32_t slot);
  // Held, or ready and taken from the index -> free.
  void free(std::uint32_t slot);
  // Issued -> free: its batch will not be filled; no worker owes it any more.
  void retire(std::uint32_t slot);

  // Ordered: the ready index's length; at least size(), more when a resume
  // leaves batches delivered ahead between those issued. Only while no slot
  // is ready.
  void set_ready_window(std::size_t entries);
  std::size_t ready_window() const { return ready_by_seq_.size(); }

 private:
  bool ordered_;
  std::vector<State> state_;
  std::vector<std::uint64_t> seq_;
  std::vector<std::uint32_t> worker_;        // issued slots: the worker that owes the batch
  std::vector<std::uint32_t> free_;          // free slots; the last one is taken first
  std::vector<std::uint32_t> ready_by_seq_;  // ordered: slot of seq % size, or kNoSlot
  std::vector<std::uint32_t> ready_list_;    // unordered: ready slots in completion order
};

}  // namespace sluice::detail
