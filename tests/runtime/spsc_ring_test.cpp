// SPSC ring stress: two threads (checked by ThreadSanitizer in the TSan build)
// and two real processes over MAP_SHARED memory, with a checked sequence.
#include <catch2/catch.hpp>

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <memory>
#include <new>
#include <thread>

#include "spsc_ring.h"

using sluice::detail::SpscRing;

namespace {

struct Item {
  std::uint64_t seq;
  std::uint64_t check;  // a function of seq, so torn or stale items are caught
};

std::uint64_t check_of(std::uint64_t seq) { return seq * 0x9e3779b97f4a7c15ULL ^ 0xabcdef; }

using Ring = SpscRing<Item, 256>;

void produce(Ring& ring, std::uint64_t count, bool sleepy) {
  for (std::uint64_t i = 0; i < count; ++i) {
    while (!ring.try_push(Item{i, check_of(i)})) std::this_thread::yield();
    // Notify in bursts, and now and then pause so the consumer falls asleep.
    if ((i & 63) == 63 || i + 1 == count) ring.notify();
    if (sleepy && (i % 50000) == 0) {
      ring.notify();
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
}

// Returns the number of items that were wrong or out of order.
std::uint64_t consume(Ring& ring, std::uint64_t count) {
  std::uint64_t bad = 0;
  Item item{};
  for (std::uint64_t i = 0; i < count; ++i) {
    int spins = 0;
    while (!ring.try_pop(item)) {
      if (++spins > 1000) ring.wait(100);
    }
    if (item.seq != i || item.check != check_of(i)) ++bad;
  }
  return bad;
}

}  // namespace

TEST_CASE("the ring passes items between two threads in order, with sleeping", "[ring]") {
  auto* ring = new Ring();
  const std::uint64_t count = 2'000'000;
  std::thread producer([&] { produce(*ring, count, true); });
  std::uint64_t bad = consume(*ring, count);
  producer.join();
  REQUIRE(bad == 0);
  REQUIRE(ring->empty());
  delete ring;
}

TEST_CASE("a full ring refuses pushes and an empty one refuses pops", "[ring]") {
  auto* ring = new Ring();
  Item item{};
  REQUIRE_FALSE(ring->try_pop(item));
  for (std::uint64_t i = 0; i < Ring::capacity; ++i) REQUIRE(ring->try_push(Item{i, check_of(i)}));
  REQUIRE_FALSE(ring->try_push(Item{0, 0}));
  REQUIRE(ring->try_pop(item));
  REQUIRE(item.seq == 0);
  REQUIRE(ring->try_push(Item{Ring::capacity, check_of(Ring::capacity)}));
  for (std::uint64_t i = 1; i <= Ring::capacity; ++i) {
    REQUIRE(ring->try_pop(item));
    REQUIRE(item.seq == i);
  }
  REQUIRE_FALSE(ring->try_pop(item));
  delete ring;
}

TEST_CASE("the ring passes millions of items between two processes", "[ring][process]") {
  void* mem = mmap(nullptr, sizeof(Ring), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  REQUIRE(mem != MAP_FAILED);
  auto* ring = new (mem) Ring();
  const std::uint64_t count = 5'000'000;
  pid_t child = fork();
  if (child == 0) {
    produce(*ring, count, true);
    _exit(0);
  }
  std::uint64_t bad = consume(*ring, count);
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  REQUIRE(bad == 0);
  REQUIRE(ring->empty());
  munmap(mem, sizeof(Ring));
}

TEST_CASE("the ring's indices wrap past 2^32 without losing, repeating or refusing an item", "[ring]") {
  // Start 300 items before the wrap: fill and drain across it, then stream
  // a million items across it between two threads.
  auto ring = std::make_unique<Ring>(0xffffffffu - 300);
  Item item{};
  for (std::uint64_t round = 0; round < 4; ++round) {
    for (std::uint64_t i = 0; i < Ring::capacity; ++i) REQUIRE(ring->try_push(Item{i, check_of(i)}));
    REQUIRE_FALSE(ring->try_push(Item{}));
    for (std::uint64_t i = 0; i < Ring::capacity; ++i) {
      REQUIRE(ring->try_pop(item));
      REQUIRE(item.seq == i);
    }
    REQUIRE_FALSE(ring->try_pop(item));
    REQUIRE(ring->empty());
  }
  auto streamed = std::make_unique<Ring>(0xffffffffu - 1000);
  const std::uint64_t n = 1'000'000;
  std::thread producer([&] { produce(*streamed, n, false); });
  const std::uint64_t bad = consume(*streamed, n);
  producer.join();
  REQUIRE(bad == 0);
}
