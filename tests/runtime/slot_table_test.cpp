// The parent's slot bookkeeping, driven directly: no processes, no arena.
#include <catch2/catch.hpp>

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "slot_table.h"

using namespace sluice::detail;
using State = SlotTable::State;

namespace {

// Every slot is counted in exactly one state.
void check_counts(const SlotTable& t) {
  CHECK(t.free_count() + t.count(State::issued) + t.count(State::ready) + t.count(State::held) == t.size());
  CHECK(t.count(State::free) == t.free_count());
}

}  // namespace

TEST_CASE("a slot goes free, issued, ready, held and free again", "[slot_table]") {
  SlotTable t(3, true);
  CHECK(t.size() == 3);
  CHECK(t.free_count() == 3);
  check_counts(t);

  const std::uint32_t slot = t.take_free();
  CHECK(slot == 0);  // slot 0 first
  CHECK(t.free_count() == 2);
  t.issue(slot, 0, 1);
  CHECK(t.state(slot) == State::issued);
  CHECK(t.seq(slot) == 0);
  CHECK(t.worker(slot) == 1);
  check_counts(t);

  CHECK_FALSE(t.ready_at(0));
  t.ready(slot);
  CHECK(t.state(slot) == State::ready);
  CHECK(t.ready_at(0));
  check_counts(t);

  CHECK(t.take_ready(0) == slot);
  CHECK_FALSE(t.ready_at(0));  // taken from the index, still ready until held
  CHECK(t.state(slot) == State::ready);
  t.hold(slot);
  CHECK(t.state(slot) == State::held);
  check_counts(t);

  t.free(slot);
  CHECK(t.state(slot) == State::free);
  CHECK(t.free_count() == 3);
  CHECK(t.take_free() == slot);  // the last freed is taken first
  CHECK(t.count(State::free) == 3);  // taken, but free until issued
  t.issue(slot, 1, 0);
  check_counts(t);
}

TEST_CASE("only the worker that owes a slot's batch may report it", "[slot_table]") {
  SlotTable t(2, true);
  const std::uint32_t slot = t.take_free();
  CHECK_FALSE(t.owes(slot, 0, 7));  // not issued yet
  t.issue(slot, 7, 0);
  CHECK(t.owes(slot, 0, 7));
  CHECK_FALSE(t.owes(slot, 1, 7));   // another worker
  CHECK_FALSE(t.owes(slot, 0, 8));   // another batch
  CHECK_FALSE(t.owes(2, 0, 7));      // no such slot
  CHECK_FALSE(t.owes(0xffffffffu, 0, 7));
  t.ready(slot);
  CHECK_FALSE(t.owes(slot, 0, 7));  // reported already
}

TEST_CASE("owed_by lists a worker's batches in order, and a re-issued batch moves to its new worker",
          "[slot_table]") {
  SlotTable t(4, false);
  const std::uint32_t a = t.take_free(), b = t.take_free(), c = t.take_free();
  t.issue(a, 12, 0);
  t.issue(b, 10, 0);
  t.issue(c, 11, 1);
  CHECK(t.owed_by(0) == std::vector<std::pair<std::uint64_t, std::uint32_t>>{{10, b}, {12, a}});
  CHECK(t.owed_by(1) == std::vector<std::pair<std::uint64_t, std::uint32_t>>{{11, c}});
  t.issue(b, 10, 1);  // worker 0 died: its batch goes to worker 1
  CHECK(t.owed_by(0) == std::vector<std::pair<std::uint64_t, std::uint32_t>>{{12, a}});
  CHECK(t.owed_by(1) == std::vector<std::pair<std::uint64_t, std::uint32_t>>{{10, b}, {11, c}});
  t.ready(c);
  CHECK(t.owed_by(1) == std::vector<std::pair<std::uint64_t, std::uint32_t>>{{10, b}});
  check_counts(t);
}

TEST_CASE("ordered: batches come out by sequence number, whatever order they complete in", "[slot_table]") {
  SlotTable t(3, true);
  std::uint32_t slot_of[3];
  for (std::uint64_t seq = 0; seq < 3; ++seq) {
    slot_of[seq] = t.take_free();
    t.issue(slot_of[seq], seq, 0);
  }
  t.ready(slot_of[2]);
  t.ready(slot_of[1]);
  CHECK(t.take_ready(0) == std::nullopt);  // batch 0 is not ready: nothing comes out
  t.ready(slot_of[0]);
  for (std::uint64_t seq = 0; seq < 3; ++seq) {
    CHECK(t.take_ready(seq) == slot_of[seq]);
    t.hold(slot_of[seq]);
  }
  CHECK(t.count(State::held) == 3);
  check_counts(t);
}

TEST_CASE("ordered: the ready window spans the batches between those issued", "[slot_table]") {
  // A resume with batches 1 and 2 delivered ahead: 2 slots hold batches 0 and 3.
  SlotTable t(2, true);
  t.set_ready_window(4);
  CHECK(t.ready_window() == 4);
  const std::uint32_t a = t.take_free(), b = t.take_free();
  t.issue(a, 0, 0);
  t.issue(b, 3, 0);
  t.ready(b);
  t.ready(a);
  CHECK(t.take_ready(0) == a);
  CHECK(t.take_ready(1) == std::nullopt);
  CHECK(t.take_ready(3) == b);
}

TEST_CASE("unordered: the oldest completion of the current epoch comes out first", "[slot_table]") {
  const std::uint64_t per_epoch = 4;
  SlotTable t(4, false);
  std::uint32_t slot_of[6] = {};
  for (std::uint64_t seq : {2, 3, 4, 5}) {
    slot_of[seq] = t.take_free();
    t.issue(slot_of[seq], seq, 0);
  }
  t.ready(slot_of[4]);  // epoch 1
  CHECK_FALSE(t.any_ready_in_epoch(0, per_epoch));
  CHECK(t.take_ready_in_epoch(0, per_epoch) == std::nullopt);
  CHECK(t.any_ready_in_epoch(1, per_epoch));
  t.ready(slot_of[3]);
  t.ready(slot_of[2]);
  CHECK(t.take_ready_in_epoch(0, per_epoch) == slot_of[3]);
  CHECK(t.take_ready_in_epoch(0, per_epoch) == slot_of[2]);
  CHECK(t.take_ready_in_epoch(0, per_epoch) == std::nullopt);
  CHECK(t.take_ready_in_epoch(1, per_epoch) == slot_of[4]);
  // A batch taken out and found empty goes back free without being held.
  t.free(slot_of[4]);
  CHECK(t.state(slot_of[4]) == State::free);
  check_counts(t);
}
