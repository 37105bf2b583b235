// doorbell.h: the sleep/wake handshake between a sleeper and its wakers, which
// may live in other processes (the Doorbell sits in shared memory).
//
//   sleeper:  bell.arm();  if (!work_visible()) sleep();  bell.disarm();
//   waker:    publish(work);  if (bell.must_ring()) wake();
//
// A Dekker handshake: the sleeper stores `armed`, then re-reads the work; the
// waker stores the work, then reads `armed`. The seq_cst fence on each side
// orders its store before its load in one total order, so at least one side
// sees the other's store: either the sleeper sees the work and does not sleep,
// or the waker sees the armed bell and wakes it. The wake-up itself must
// survive a sleeper that has not yet gone to sleep (an eventfd counts; a futex
// re-checks its word in the kernel), which closes the gap between the check
// and the sleep. A spurious ring costs one wake-up, never correctness.
#pragma once

#include <atomic>
#include <cstdint>

namespace sluice::detail {

class Doorbell {
 public:
  // Sleeper, before its last look for work.
  void arm() {
    armed_.store(1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_seq_cst);
  }
  // Sleeper, once awake (or when it found work and did not sleep).
  void disarm() { armed_.store(0, std::memory_order_relaxed); }
  // Waker, after publishing work: whether the sleeper may be asleep.
  bool must_ring() const {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    return armed_.load(std::memory_order_relaxed) != 0;
  }
  // Anyone: whether the sleeper is about to sleep or asleep. A hint for
  // choosing when to wake it (no fence: it may be stale by the time it returns).
  bool armed() const { return armed_.load(std::memory_order_relaxed) != 0; }

 private:
  std::atomic<std::uint32_t> armed_{0};
};

static_assert(std::atomic<std::uint32_t>::is_always_lock_free, "a lock-based atomic would not work across processes");

}  // namespace sluice::detail
