// The host backend keeps the CUDA ordering model: streams run in order, an
// event captures what was submitted before its record, a wait holds back
// only what is submitted after it.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "sluice/cuda/host_backend.h"

using namespace sluice::cuda;
using namespace std::chrono_literals;

TEST_CASE("host streams run their work in submission order", "[host_backend]") {
  HostBackend b;
  StreamHandle s = b.create_stream();
  std::vector<int> order;
  for (int i = 0; i < 100; ++i) b.enqueue(s, [&order, i] { order.push_back(i); });
  EventHandle e = b.create_event();
  b.record(e, s);
  b.synchronize(e);
  REQUIRE(order.size() == 100);
  for (int i = 0; i < 100; ++i) CHECK(order[i] == i);
  b.destroy_event(e);
  b.destroy_stream(s);
}

TEST_CASE("a host event completes when the work before its record has run", "[host_backend]") {
  HostBackend b;
  StreamHandle s = b.create_stream();
  EventHandle e = b.create_event();
  CHECK(b.query(e));  // never recorded: complete
  std::atomic<bool> go{false};
  b.enqueue(s, [&] { while (!go.load()) std::this_thread::sleep_for(1ms); });
  b.record(e, s);
  std::this_thread::sleep_for(20ms);
  CHECK_FALSE(b.query(e));
  go = true;
  b.synchronize(e);
  CHECK(b.query(e));
  b.destroy_event(e);
  b.destroy_stream(s);
}

TEST_CASE("a stream waiting on an event holds back only later work", "[host_backend]") {
  HostBackend b;
  StreamHandle producer = b.create_stream();
  StreamHandle consumer = b.create_stream();
  EventHandle e = b.create_event();
  EventHandle done = b.create_event();
  std::atomic<bool> go{false};
  std::atomic<int> before{0}, after{0};
  b.enqueue(consumer, [&] { before = 1; });
  b.enqueue(producer, [&] { while (!go.load()) std::this_thread::sleep_for(1ms); });
  b.record(e, producer);
  b.wait(consumer, e);
  b.record(e, producer);  // a later record does not change what the wait captured
  b.enqueue(consumer, [&] { after = 1; });
  b.record(done, consumer);
  // The work queued before the wait runs; the work after it does not.
  for (int i = 0; i < 5000 && before == 0; ++i) std::this_thread::sleep_for(1ms);
  CHECK(before == 1);
  std::this_thread::sleep_for(20ms);
  CHECK(after == 0);
  go = true;
  b.synchronize(done);
  CHECK(after == 1);
  b.destroy_event(e);
  b.destroy_event(done);
  b.destroy_stream(producer);
  b.destroy_stream(consumer);
}

TEST_CASE("the null host stream is the calling thread", "[host_backend]") {
  HostBackend b;
  std::vector<std::uint8_t> src(1000, 7), dst(1000, 0);
  b.copy_async(dst.data(), src.data(), src.size(), nullptr);
  CHECK(dst == src);  // already done
  EventHandle e = b.create_event();
  b.record(e, nullptr);
  CHECK(b.query(e));
  b.destroy_event(e);
}

TEST_CASE("destroying a host stream runs what is queued first", "[host_backend]") {
  HostBackend b;
  StreamHandle s = b.create_stream();
  std::atomic<int> ran{0};
  for (int i = 0; i < 10; ++i) {
    b.enqueue(s, [&] {
      std::this_thread::sleep_for(1ms);
      ++ran;
    });
  }
  b.destroy_stream(s);
  CHECK(ran == 10);
}

TEST_CASE("host buffers are 256-byte aligned", "[host_backend]") {
  HostBackend b;
  void* p = b.allocate(1000);
  CHECK(reinterpret_cast<std::uintptr_t>(p) % 256 == 0);
  std::memset(p, 1, 1000);
  b.deallocate(p);
}
