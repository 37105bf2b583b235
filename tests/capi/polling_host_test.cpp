// A host that never blocks, through the C API as a frame loop or an event
// loop drives it: what every call does after a failure, after an interrupt,
// with timeouts of every size, and how often ready_fd wakes it under poll and
// epoll (level- and edge-triggered).
#include <catch2/catch.hpp>

#include <poll.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>

#include "sluice/loader.h"
#include "sluice/producer.h"
#include "sluice/sluice.h"
#include "test_support.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Fill {
  std::uint64_t poison = ~0ULL;  // the sample whose fill fails
  int delay_ms = 0;              // per batch
};

int fill_ids(void* user, const sluice_fill* b, char* error, size_t error_size) {
  const Fill& f = *static_cast<const Fill*>(user);
  if (f.delay_ms > 0) usleep(static_cast<useconds_t>(f.delay_ms) * 1000);
  auto* ids = static_cast<int64_t*>(b->data[0]);
  for (size_t j = 0; j < b->size; ++j) {
    if (b->samples[j] == f.poison) {
      std::snprintf(error, error_size, "sample %llu is poison", static_cast<unsigned long long>(f.poison));
      return 1;
    }
    ids[j] = static_cast<int64_t>(b->samples[j]);
  }
  return 0;
}

const sluice_field_spec kFields[] = {{"id", SLUICE_I64, 0, nullptr}};

sluice_loader* open_loader(Fill* fill, std::uint64_t samples, std::uint32_t batch, std::uint32_t workers) {
  sluice_options o;
  sluice_options_init(&o);
  o.dataset_size = samples;
  o.batch_size = batch;
  o.workers = workers;
  o.field_count = 1;
  o.fields = kFields;
  o.fill = fill_ids;
  o.user = fill;
  sluice_loader* loader = nullptr;
  REQUIRE(sluice_loader_create(&o, &loader) == SLUICE_OK);
  return loader;
}

bool readable(int fd) {
  pollfd p{fd, POLLIN, 0};
  return poll(&p, 1, 0) == 1;
}

std::int64_t ms_since(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t).count();
}

}  // namespace

TEST_CASE("a C host after a failed next: every call is an error or a value, never a crash", "[poll][c_api]") {
  Fill fill;
  fill.poison = 40;
  sluice_loader* loader = open_loader(&fill, 200, 5, 2);
  sluice_batch* b = nullptr;
  sluice_status s;
  int batches = 0;
  while ((s = sluice_loader_next(loader, &b)) == SLUICE_OK) {
    ++batches;
    sluice_batch_release(b);
  }
  const std::string error = sluice_last_error();
  REQUIRE(s == SLUICE_ERROR);
  REQUIRE(error.find("sample 40 is poison") != std::string::npos);
  REQUIRE(batches <= 8);

  // The frame-loop host asks for the fd exactly now: a readable fd, and the same error from every call.
  const int fd = sluice_loader_ready_fd(loader);
  REQUIRE(fd >= 0);
  REQUIRE(readable(fd));
  REQUIRE(sluice_loader_ready_fd(loader) == fd);
  REQUIRE(sluice_loader_try_next(loader, &b) == SLUICE_ERROR);
  REQUIRE(b == nullptr);
  REQUIRE(sluice_last_error() == error);
  REQUIRE(sluice_loader_next_for(loader, 10, &b) == SLUICE_ERROR);
  REQUIRE(sluice_loader_next_for(loader, -1, &b) == SLUICE_ERROR);
  REQUIRE(sluice_loader_next(loader, &b) == SLUICE_ERROR);
  REQUIRE(sluice_last_error() == error);
  REQUIRE(readable(fd));
  REQUIRE(sluice_loader_finished(loader) == 1);
  sluice_stats stats;
  stats.size = sizeof stats;
  REQUIRE(sluice_loader_stats(loader, &stats) == SLUICE_OK);
  REQUIRE(stats.batches_delivered == static_cast<std::uint64_t>(batches));
  char* state = nullptr;
  REQUIRE(sluice_loader_state_json(loader, &state) == SLUICE_OK);
  REQUIRE(std::string(state).find("\"batch\":" + std::to_string(batches) + ",") != std::string::npos);
  sluice_free(state);
  sluice_loader_destroy(loader);
}

TEST_CASE("a ready_fd asked for before the failure wakes the host for it", "[poll][c_api]") {
  Fill fill;
  fill.poison = 0;  // the first batch fails
  sluice_loader* loader = open_loader(&fill, 50, 5, 1);
  const int fd = sluice_loader_ready_fd(loader);
  sluice_batch* b = nullptr;
  sluice_status s = SLUICE_NOT_READY;
  const auto start = Clock::now();
  while (s == SLUICE_NOT_READY && ms_since(start) < 10000) {
    pollfd p{fd, POLLIN, 0};
    REQUIRE(poll(&p, 1, 1000) >= 0);
    s = sluice_loader_try_next(loader, &b);
  }
  REQUIRE(s == SLUICE_ERROR);
  REQUIRE(std::string(sluice_last_error()).find("sample 0 is poison") != std::string::npos);
  REQUIRE(readable(fd));  // the error stays to be read
  sluice_loader_destroy(loader);
}

TEST_CASE("finished() is true once the loader is interrupted, as sluice.h says", "[poll][c_api]") {
  Fill fill;
  fill.delay_ms = 20;
  sluice_loader* loader = open_loader(&fill, 100, 5, 1);
  REQUIRE(sluice_loader_finished(loader) == 0);
  sluice_loader_interrupt(loader);
  REQUIRE(sluice_loader_finished(loader) == 1);
  sluice_batch* b = nullptr;
  REQUIRE(sluice_loader_try_next(loader, &b) == SLUICE_END);
  // The loop a host writes ends.
  int calls = 0;
  while (true) {
    ++calls;
    if (sluice_loader_try_next(loader, &b) != SLUICE_NOT_READY || sluice_loader_finished(loader)) break;
  }
  REQUIRE(calls == 1);
  sluice_loader_destroy(loader);

  sluice::Options o;
  o.dataset_size = 10;
  o.batch_size = 5;
  o.workers = 1;
  o.fields = {{"v", sluice::DType::u8, {}}};
  o.producer = sluice::per_sample([](const sluice::SampleRef&) {});
  sluice::Loader cxx(o);
  cxx.interrupt();
  REQUIRE(cxx.finished());
  REQUIRE_FALSE(cxx.try_next());
}

TEST_CASE("next_for with a timeout of 'forever' waits for the batch, and -1 means no limit", "[poll][c_api]") {
  Fill fill;
  fill.delay_ms = 300;
  sluice_loader* loader = open_loader(&fill, 20, 5, 1);
  sluice_batch* b = nullptr;
  for (std::int64_t timeout : {std::numeric_limits<std::int64_t>::max(), std::int64_t{-1},
                               std::int64_t{9'300'000'000'000}}) {
    INFO("timeout " << timeout);
    const auto start = Clock::now();
    REQUIRE(sluice_loader_next_for(loader, timeout, &b) == SLUICE_OK);
    REQUIRE(ms_since(start) >= 100);  // waited for the slow fill, did not return NOT_READY at once
    sluice_batch_release(b);
  }
  sluice_loader_destroy(loader);

  sluice::Options o;
  o.dataset_size = 10;
  o.batch_size = 5;
  o.workers = 1;
  o.fields = {{"v", sluice::DType::u8, {}}};
  o.producer = sluice::per_sample([](const sluice::SampleRef&) { usleep(60'000); });
  sluice::Loader cxx(o);
  const auto start = Clock::now();
  REQUIRE(cxx.next_for(std::chrono::milliseconds::max()));
  REQUIRE(ms_since(start) >= 100);
  REQUIRE(cxx.next_for(std::chrono::milliseconds::max()));
  REQUIRE_FALSE(cxx.next_for(std::chrono::milliseconds::max()));  // the end, not a timeout
  REQUIRE(cxx.finished());
}

namespace {

enum class Waiter { poll, epoll_level, epoll_edge };

struct FrameLoopResult {
  std::uint64_t batches = 0;
  std::uint64_t wakeups = 0;       // the wait returned with the fd ready
  std::uint64_t empty_wakeups = 0;  // ... and try_next found no batch
  std::uint64_t frames = 0;
  sluice_status end = SLUICE_NOT_READY;
};

// A 60 Hz-style frame loop that waits on the fd (at most 16 ms a frame) and
// takes at most one batch per frame, releasing it at once.
FrameLoopResult frame_loop(sluice_loader* loader, Waiter how, std::uint64_t max_frames) {
  const int fd = sluice_loader_ready_fd(loader);
  REQUIRE(fd >= 0);
  int ep = -1;
  if (how != Waiter::poll) {
    ep = epoll_create1(EPOLL_CLOEXEC);
    epoll_event e{};
    e.events = EPOLLIN | (how == Waiter::epoll_edge ? EPOLLET : 0u);
    REQUIRE(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e) == 0);
  }
  FrameLoopResult r;
  while (r.frames < max_frames) {
    ++r.frames;
    bool ready;
    if (how == Waiter::poll) {
      pollfd p{fd, POLLIN, 0};
      ready = poll(&p, 1, 16) == 1;
    } else {
      epoll_event e{};
      ready = epoll_wait(ep, &e, 1, 16) == 1;
    }
    if (!ready) continue;  // a frame with nothing to do (the host still may call try_next; it need not)
    ++r.wakeups;
    sluice_batch* b = nullptr;
    const sluice_status s = sluice_loader_try_next(loader, &b);
    if (s == SLUICE_NOT_READY) {
      ++r.empty_wakeups;
      continue;
    }
    if (s != SLUICE_OK) {
      r.end = s;
      break;
    }
    ++r.batches;
    sluice_batch_release(b);
  }
  if (ep >= 0) close(ep);
  return r;
}

}  // namespace

TEST_CASE("a frame loop on ready_fd: about one wake-up per batch, no starvation edge-triggered", "[poll][c_api]") {
  const auto how = GENERATE(Waiter::poll, Waiter::epoll_level, Waiter::epoll_edge);
  const int delay = GENERATE(0, 5);  // workers faster than frames, and about as fast as them
  INFO("waiter " << static_cast<int>(how) << ", fill delay " << delay << " ms");
  Fill fill;
  fill.delay_ms = delay;
  sluice_loader* loader = open_loader(&fill, 240, 4, 2);  // 60 batches
  const FrameLoopResult r = frame_loop(loader, how, 2000);
  INFO("frames " << r.frames << ", wake-ups " << r.wakeups << ", empty " << r.empty_wakeups);
  REQUIRE(r.end == SLUICE_END);
  REQUIRE(r.batches == 60);
  // Only the fd decides when the host wakes: every batch was taken on a
  // wake-up, and empty wake-ups (a completion landing just after a call's
  // look) stay a small share of them.
  REQUIRE(r.empty_wakeups <= r.batches / 2 + 2);
  REQUIRE(r.frames <= 60 * 2 + 60);  // never starved for frames on end
  sluice_loader_destroy(loader);
}

TEST_CASE("ready_fd is not readable while nothing is ready, after a call took the only batch", "[poll][c_api]") {
  Fill fill;
  fill.delay_ms = 200;
  sluice_loader* loader = open_loader(&fill, 10, 5, 1);
  const int fd = sluice_loader_ready_fd(loader);
  sluice_batch* b = nullptr;
  REQUIRE(sluice_loader_try_next(loader, &b) == SLUICE_NOT_READY);  // hands out the work
  REQUIRE_FALSE(readable(fd));                                       // nothing ready: a host would sleep
  pollfd p{fd, POLLIN, 0};
  REQUIRE(poll(&p, 1, 5000) == 1);  // the first batch wakes it
  REQUIRE(sluice_loader_try_next(loader, &b) == SLUICE_OK);
  REQUIRE_FALSE(readable(fd));  // the second is still being made
  // Its own release wakes no one: the second batch is in flight and will.
  sluice_batch_release(b);
  REQUIRE_FALSE(readable(fd));
  REQUIRE(poll(&p, 1, 5000) == 1);
  REQUIRE(sluice_loader_try_next(loader, &b) == SLUICE_OK);
  sluice_batch_release(b);
  REQUIRE(readable(fd));  // the end is news
  REQUIRE(sluice_loader_try_next(loader, &b) == SLUICE_END);
  sluice_loader_destroy(loader);
}
