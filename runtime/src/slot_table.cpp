#include "slot_table.h"

#include <algorithm>
#include <cassert>

#include "shared_layout.h"

namespace sluice::detail {

SlotTable::SlotTable(std::uint32_t slots, bool ordered)
    : ordered_(ordered),
      state_(slots, State::free),
      seq_(slots, 0),
      worker_(slots, 0),
      ready_by_seq_(slots, kNoSlot) {
  for (std::uint32_t s = slots; s-- > 0;) free_.push_back(s);
}

std::uint32_t SlotTable::count(State state) const {
  return static_cast<std::uint32_t>(std::count(state_.begin(), state_.end(), state));
}

bool SlotTable::owes(std::uint32_t slot, std::uint32_t worker, std::uint64_t seq) const {
  return slot < size() && state_[slot] == State::issued && worker_[slot] == worker && seq_[slot] == seq;
}

std::vector<std::pair<std::uint64_t, std::uint32_t>> SlotTable::owed_by(std::uint32_t worker) const {
  std::vector<std::pair<std::uint64_t, std::uint32_t>> owed;
  for (std::uint32_t slot = 0; slot < size(); ++slot) {
    if (state_[slot] == State::issued && worker_[slot] == worker) owed.emplace_back(seq_[slot], slot);
  }
  std::sort(owed.begin(), owed.end());
  return owed;
}

std::uint32_t SlotTable::take_free() {
  assert(!free_.empty());
  const std::uint32_t slot = free_.back();
  free_.pop_back();
  return slot;
}

void SlotTable::issue(std::uint32_t slot, std::uint64_t seq, std::uint32_t worker) {
  assert(state_[slot] == State::free || state_[slot] == State::issued);
  state_[slot] = State::issued;
  seq_[slot] = seq;
  worker_[slot] = worker;
}

void SlotTable::ready(std::uint32_t slot) {
  assert(state_[slot] == State::issued);
  state_[slot] = State::ready;
  if (ordered_) {
    ready_by_seq_[seq_[slot] % ready_by_seq_.size()] = slot;
  } else {
    ready_list_.push_back(slot);
  }
}

std::optional<std::uint32_t> SlotTable::take_ready(std::uint64_t seq) {
  std::uint32_t& entry = ready_by_seq_[seq % ready_by_seq_.size()];
  if (entry == kNoSlot) return std::nullopt;
  return std::exchange(entry, kNoSlot);
}

bool SlotTable::ready_at(std::uint64_t seq) const { return ready_by_seq_[seq % ready_by_seq_.size()] != kNoSlot; }

std::optional<std::uint32_t> SlotTable::take_ready_in_epoch(std::uint64_t epoch, std::uint64_t per_epoch) {
  for (auto it = ready_list_.begin(); it != ready_list_.end(); ++it) {
    if (seq_[*it] / per_epoch != epoch) continue;
    const std::uint32_t slot = *it;
    ready_list_.erase(it);
    return slot;
  }
  return std::nullopt;
}

bool SlotTable::any_ready_in_epoch(std::uint64_t epoch, std::uint64_t per_epoch) const {
  return std::any_of(ready_list_.begin(), ready_list_.end(),
                     [&](std::uint32_t slot) { return seq_[slot] / per_epoch == epoch; });
}

void SlotTable::hold(std::uint32_t slot) {
  assert(state_[slot] == State::ready);
  state_[slot] = State::held;
}

void SlotTable::free(std::uint32_t slot) {
  assert(state_[slot] == State::held || state_[slot] == State::ready);
  state_[slot] = State::free;
  free_.push_back(slot);
}

void SlotTable::retire(std::uint32_t slot) {
  assert(state_[slot] == State::issued);
  state_[slot] = State::free;
  free_.push_back(slot);
}

void SlotTable::set_ready_window(std::size_t entries) {
  assert(count(State::ready) == 0 && entries >= size());
  ready_by_seq_.assign(entries, kNoSlot);
}

}  // namespace sluice::detail
