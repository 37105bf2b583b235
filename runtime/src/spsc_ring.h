// spsc_ring.h: a lock-free single-producer/single-consumer ring that can live
// in shared memory and be used from two processes.
//
// Layout: the producer's index and its cached copy of the consumer's index
// share one cache line; the consumer's index and its cached copy of the
// producer's index share another; the items follow. Each side reads the other
// side's line only when its cached copy says the ring is full (producer) or
// empty (consumer). The ring holds no pointer, only indices and items, so it
// works at any address; it is standard-layout and lives at an offset in the
// arena, constructed there before the processes fork.
//
// Indices are free-running 32-bit counters (wrapping is fine: Capacity is a
// power of two that divides 2^32) so that the consumer can sleep on the
// producer's index with a futex.
//
// Memory ordering:
// - Each side loads its own index relaxed: only it writes that index.
// - try_push writes the item, then stores tail_ with release; try_pop loads
//   tail_ with acquire before reading the item. So a consumer that sees the new
//   tail also sees the item (release/acquire pair on tail_).
// - try_pop reads the item, then stores head_ with release; try_push loads
//   head_ with acquire before reusing that cell. So the producer never
//   overwrites an item the consumer is still reading (release/acquire on head_).
// - Sleeping (wait/notify) is the Doorbell handshake (doorbell.h) between
//   sleeping_ and tail_: the consumer arms the bell, then re-reads tail_; the
//   producer stores tail_, then checks the bell. The futex re-checks tail_ in
//   the kernel, closing the gap between the consumer's check and its sleep.
// - Nothing here depends on x86's strong ordering: every cross-process
//   handoff is a release/acquire pair or a seq_cst fence, which C++ maps to
//   the right barriers on weakly ordered CPUs (aarch64: stlr/ldar, dmb ish).
//
// Thread safety: exactly one producer and one consumer, in any processes.
#pragma once

#include <atomic>
#include <cstdint>
#include <type_traits>

#include "doorbell.h"
#include "futex.h"

namespace sluice::detail {

inline constexpr std::size_t kCacheLine = 64;

template <typename T, std::uint32_t Capacity>
class SpscRing {
  static_assert(Capacity >= 2 && (Capacity & (Capacity - 1)) == 0, "Capacity must be a power of two");
  static_assert(std::is_trivially_copyable_v<T>, "items are copied between processes");
  static_assert(std::atomic<std::uint32_t>::is_always_lock_free,
                "a lock-based atomic would not work across processes");

 public:
  static constexpr std::uint32_t capacity = Capacity;

  SpscRing() = default;
  // Starts the free-running indices at first_index instead of 0; a ring
  // behaves the same from any start, which lets a test cross the 2^32 wrap.
  explicit SpscRing(std::uint32_t first_index)
      : tail_(first_index), head_cache_(first_index), head_(first_index), tail_cache_(first_index) {}
  SpscRing(const SpscRing&) = delete;
  SpscRing& operator=(const SpscRing&) = delete;

  // Producer: appends v, or returns false if the ring is full.
  bool try_push(const T& v) {
    const std::uint32_t tail = tail_.load(std::memory_order_relaxed);
    if (tail - head_cache_ == Capacity) {
      head_cache_ = head_.load(std::memory_order_acquire);
      if (tail - head_cache_ == Capacity) return false;
    }
    items_[tail & (Capacity - 1)] = v;
    tail_.store(tail + 1, std::memory_order_release);
    return true;
  }

  // Producer, after one or more pushes: wakes the consumer if it sleeps.
  void notify() {
    if (sleeping_.must_ring()) futex_wake_all(tail_);
  }

  // Consumer: removes the oldest item into out, or returns false if empty.
  bool try_pop(T& out) {
    const std::uint32_t head = head_.load(std::memory_order_relaxed);
    if (head == tail_cache_) {
      tail_cache_ = tail_.load(std::memory_order_acquire);
      if (head == tail_cache_) return false;
    }
    out = items_[head & (Capacity - 1)];
    head_.store(head + 1, std::memory_order_release);
    return true;
  }

  // Consumer: whether an item is ready (may be stale by the time it returns).
  bool empty() const {
    return tail_.load(std::memory_order_acquire) == head_.load(std::memory_order_relaxed);
  }

  // Consumer: sleeps until an item may be ready, at most timeout_ms (< 0: no
  // limit). May return early; callers loop.
  void wait(int timeout_ms) {
    sleeping_.arm();
    const std::uint32_t tail = tail_.load(std::memory_order_relaxed);
    if (tail == head_.load(std::memory_order_relaxed)) futex_wait(tail_, tail, timeout_ms);
    sleeping_.disarm();
  }

  // Producer: whether the consumer sleeps or is about to (a hint, doorbell.h):
  // a push then costs a wake-up.
  bool consumer_sleeps() const { return sleeping_.armed(); }

  // Anyone: wakes a sleeping consumer without pushing (used to deliver "stop").
  void wake() { futex_wake_all(tail_); }

 private:
  // Producer's line.
  alignas(kCacheLine) std::atomic<std::uint32_t> tail_{0};
  std::uint32_t head_cache_ = 0;
  // Consumer's line.
  alignas(kCacheLine) std::atomic<std::uint32_t> head_{0};
  std::uint32_t tail_cache_ = 0;
  alignas(kCacheLine) Doorbell sleeping_;
  alignas(kCacheLine) T items_[Capacity];
};

}  // namespace sluice::detail
