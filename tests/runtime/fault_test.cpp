// Faults: crashed, hung and failing workers, poison samples, interrupts,
// parent death, memory growth. Real processes and real signals throughout.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "sluice/error.h"
#include "sluice/loader.h"
#include "sluice/producer.h"
#include "test_support.h"

using namespace sluice;
using namespace std::chrono_literals;

namespace {

// Every field of a batch and its ids, hashed (FNV-1a): equal digests mean
// equal batches.
std::uint64_t digest(const Batch& b) {
  std::uint64_t h = 1469598103934665603ULL;
  auto mix = [&](const void* data, std::size_t n) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (std::size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ULL;
  };
  mix(b.sample_ids().data(), b.sample_ids().size_bytes());
  for (std::size_t f = 0; f < b.field_count(); ++f) mix(b.field(f).data, b.field(f).nbytes);
  return h;
}

// A producer whose output depends only on the sample index.
void write_sample(const SampleRef& s) {
  auto* v = s.as<std::uint32_t>(0);
  for (int k = 0; k < 64; ++k) v[k] = static_cast<std::uint32_t>(s.index * 2654435761u + k);
}

Options base_options(std::uint64_t n, std::uint32_t batch, std::uint32_t workers) {
  Options o;
  o.dataset_size = n;
  o.batch_size = batch;
  o.workers = workers;
  o.fields = {{"v", DType::u32, {64}}};
  o.producer = per_sample(write_sample);
  return o;
}

bool process_gone(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(f, line)) return true;
  auto close = line.rfind(')');
  return close != std::string::npos && line[close + 2] == 'Z';  // a zombie has exited
}

std::size_t rss_anon_kb(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  std::string key;
  while (f >> key) {
    if (key == "RssAnon:") {
      std::size_t kb = 0;
      f >> kb;
      return kb;
    }
  }
  return 0;
}

}  // namespace

TEST_CASE("kill -9 of random workers during 10 epochs changes nothing the consumer sees", "[faults]") {
  Options o = base_options(600, 16, 3);
  o.shuffle = true;
  o.seed = 1234;
  o.epochs = 10;
  std::vector<std::uint64_t> clean;
  {
    Loader loader(o);
    while (auto b = loader.next()) clean.push_back(digest(*b));
  }
  REQUIRE(clean.size() == 10 * 38);

  std::vector<std::uint64_t> faulty;
  std::mt19937 rng(99);
  std::uint32_t kills = 0;
  {
    Loader loader(o);
    while (auto b = loader.next()) {
      faulty.push_back(digest(*b));
      if (faulty.size() % 25 == 0) {
        // A worker killed earlier may not have been noticed yet (the loader
        // looks when it waits), so its pid can be stale: ESRCH, already dead.
        auto pids = loader.worker_pids();
        const int rc = kill(pids[rng() % pids.size()], SIGKILL);
        REQUIRE((rc == 0 || errno == ESRCH));
        kills += rc == 0;
      }
    }
    REQUIRE(loader.stats().worker_restarts >= 1);
    REQUIRE(loader.stats().worker_restarts <= kills);
    REQUIRE(loader.stats().skipped_samples.empty());
  }
  REQUIRE(faulty == clean);
  REQUIRE(test::descendants(getpid()).empty());
}

TEST_CASE("a sample that crashes its worker every time is a poison sample", "[faults]") {
  Options o = base_options(200, 8, 2);
  o.epochs = 2;
  o.producer = per_sample([](const SampleRef& s) {
    if (s.index == 77) raise(SIGSEGV);
    write_sample(s);
  });

  SECTION("on_error = fail names it") {
    Loader loader(o);
    REQUIRE_THROWS_WITH([&] { while (loader.next()) {} }(),
                        Catch::Contains("sample 77") && Catch::Contains("failed 3 times") &&
                            Catch::Contains("signal 11"));
    REQUIRE(test::descendants(getpid()).empty());
  }
  SECTION("on_error = skip drops it from every epoch and reports it") {
    o.on_error = OnError::skip;
    Loader loader(o);
    std::vector<std::multiset<std::uint64_t>> seen(2);
    while (auto b = loader.next()) {
      for (std::uint64_t id : b->sample_ids()) seen[b->epoch()].insert(id);
      REQUIRE(b->field(0).shape[0] == static_cast<std::int64_t>(b->size()));
    }
    for (const auto& epoch : seen) {
      REQUIRE(epoch.size() == 199);
      REQUIRE(epoch.count(77) == 0);
      REQUIRE(std::set<std::uint64_t>(epoch.begin(), epoch.end()).size() == 199);
    }
    REQUIRE(loader.stats().skipped_samples == std::vector<std::uint64_t>{77});
    REQUIRE(loader.stats().worker_restarts >= 3);
  }
}

TEST_CASE("a hung batch gets its worker killed and is retried, then the policy applies", "[faults]") {
  Options o = base_options(100, 10, 2);
  o.batch_timeout_ms = 200;
  o.producer = per_sample([](const SampleRef& s) {
    if (s.index == 42) pause();  // hangs until killed
    write_sample(s);
  });
  SECTION("fail") {
    Loader loader(o);
    REQUIRE_THROWS_WITH([&] { while (loader.next()) {} }(),
                        Catch::Contains("sample 42") && Catch::Contains("timed out after 200 ms"));
  }
  SECTION("skip") {
    o.on_error = OnError::skip;
    Loader loader(o);
    std::set<std::uint64_t> seen;
    while (auto b = loader.next()) seen.insert(b->sample_ids().begin(), b->sample_ids().end());
    REQUIRE(seen.size() == 99);
    REQUIRE(seen.count(42) == 0);
    REQUIRE(loader.stats().skipped_samples == std::vector<std::uint64_t>{42});
  }
  REQUIRE(test::descendants(getpid()).empty());
}

TEST_CASE("a producer exception with on_error = skip drops that sample only", "[faults]") {
  Options o = base_options(64, 8, 2);
  o.on_error = OnError::skip;
  o.producer = per_sample([](const SampleRef& s) {
    if (s.index == 5 || s.index == 50) throw std::runtime_error("cannot decode");
    write_sample(s);
  });
  Loader loader(o);
  std::vector<std::uint64_t> seen;
  while (auto b = loader.next()) seen.insert(seen.end(), b->sample_ids().begin(), b->sample_ids().end());
  REQUIRE(seen.size() == 62);
  REQUIRE(std::find(seen.begin(), seen.end(), 5) == seen.end());
  auto skipped = loader.stats().skipped_samples;
  std::sort(skipped.begin(), skipped.end());
  REQUIRE(skipped == std::vector<std::uint64_t>{5, 50});
  REQUIRE(loader.stats().worker_restarts == 0);
}

TEST_CASE("a producer that fails a batch emptied by skips stops the run instead of retrying it forever",
          "[faults]") {
  // Fails batch 1 without naming a sample: its samples are skipped, and the
  // batch, empty now, fails again.
  struct FailsBatchOne final : Producer {
    void fill(BatchContext& batch) override {
      if (batch.batch_index() == 1) throw std::runtime_error("batch 1 is unreadable");
      for (std::size_t j = 0; j < batch.size(); ++j) write_sample(SampleRef{batch, j, batch.samples()[j]});
    }
  };
  Options o = base_options(32, 8, 2);
  o.on_error = OnError::skip;
  o.producer = std::make_shared<FailsBatchOne>();
  Loader loader(o);
  REQUIRE_THROWS_WITH(
      [&] { while (loader.next()) {} }(),
      Catch::Contains("failed on epoch 0, batch 1, which on_error = skip had emptied: batch 1 is unreadable"));
  REQUIRE(loader.stats().skipped_samples.size() == 8);
}

TEST_CASE("interrupt() from another thread ends next() promptly", "[faults][shutdown]") {
  Options o = base_options(1000, 10, 2);
  o.epochs = 0;
  o.producer = per_sample([](const SampleRef& s) {
    std::this_thread::sleep_for(500ms);  // 5 s a batch: next() is asleep, and only the wake-up ends it early
    write_sample(s);
  });
  auto loader = std::make_unique<Loader>(o);
  std::thread stopper([&] {
    std::this_thread::sleep_for(100ms);
    loader->interrupt();
  });
  auto start = std::chrono::steady_clock::now();
  while (loader->next()) {
  }
  auto took = std::chrono::steady_clock::now() - start;
  stopper.join();
  REQUIRE(loader->interrupted());
  REQUIRE(took < 300ms);  // 100 ms until the interrupt, then at most 200 ms
  const auto destroy_start = std::chrono::steady_clock::now();
  loader.reset();
  REQUIRE(std::chrono::steady_clock::now() - destroy_start < 1s);  // workers mid-batch are killed, not awaited
}

TEST_CASE("workers exit within a second when their parent is killed with SIGKILL", "[faults][shutdown]") {
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  pid_t child = fork();
  if (child == 0) {
    close(fds[0]);
    Options o = base_options(1000, 10, 3);
    o.epochs = 0;
    Loader loader(o);
    loader.next();
    std::vector<int> pids = loader.worker_pids();
    [[maybe_unused]] ssize_t n = write(fds[1], pids.data(), pids.size() * sizeof(int));
    pause();
    _exit(0);
  }
  close(fds[1]);
  int pids[3] = {};
  std::size_t got = 0;
  while (got < sizeof pids) {
    ssize_t n = read(fds[0], reinterpret_cast<char*>(pids) + got, sizeof pids - got);
    REQUIRE(n > 0);
    got += static_cast<std::size_t>(n);
  }
  close(fds[0]);
  for (int pid : pids) REQUIRE_FALSE(process_gone(pid));
  REQUIRE(kill(child, SIGKILL) == 0);
  REQUIRE(waitpid(child, nullptr, 0) == child);
  auto deadline = std::chrono::steady_clock::now() + 1s;
  bool all_gone = false;
  while (!all_gone && std::chrono::steady_clock::now() < deadline) {
    all_gone = std::all_of(std::begin(pids), std::end(pids), process_gone);
    std::this_thread::sleep_for(10ms);
  }
  REQUIRE(all_gone);
}

TEST_CASE("worker memory does not grow over 20 epochs", "[faults][memory]") {
  Options o = base_options(4000, 50, 2);
  o.epochs = 20;
  o.shuffle = true;
  Loader loader(o);
  std::vector<std::size_t> after_epoch_1;
  while (auto b = loader.next()) {
    if (b->epoch() == 1 && b->index() == 0) {
      for (int pid : loader.worker_pids()) after_epoch_1.push_back(rss_anon_kb(pid));
    }
  }
  auto pids = loader.worker_pids();
  for (std::size_t w = 0; w < pids.size(); ++w) {
    const std::size_t now = rss_anon_kb(pids[w]);
    CAPTURE(w, after_epoch_1[w], now);
    REQUIRE(now > 0);
    REQUIRE(now <= after_epoch_1[w] + 256);  // KiB
  }
}

TEST_CASE("a sample that makes its worker balloon is killed by the memory limit, then skipped", "[faults][memory]") {
  Options o = base_options(60, 6, 2);
  o.worker_memory_mb = 64;
  o.on_error = OnError::skip;
  o.producer = per_sample([](const SampleRef& s) {
    if (s.index == 13) {
      // Leaks 16 MiB every 10 ms, touched so it is resident, until killed.
      for (;;) {
        auto* p = static_cast<char*>(std::malloc(16 << 20));
        std::memset(p, 1, 16 << 20);
        std::this_thread::sleep_for(10ms);
      }
    }
    write_sample(s);
  });
  Loader loader(o);
  std::set<std::uint64_t> seen;
  while (auto b = loader.next()) seen.insert(b->sample_ids().begin(), b->sample_ids().end());
  REQUIRE(seen.size() == 59);
  REQUIRE(loader.stats().skipped_samples == std::vector<std::uint64_t>{13});
  REQUIRE(loader.stats().worker_restarts >= 3);
}

TEST_CASE("if the zygote is killed, its workers die with it and next() says so", "[faults]") {
  Options o = base_options(100000, 10, 2);
  o.epochs = 0;
  Loader loader(o);
  REQUIRE(loader.next());
  pid_t zygote = 0;
  for (const auto& p : test::descendants(getpid())) {
    if (p.ppid == getpid()) zygote = p.pid;
  }
  REQUIRE(zygote > 0);
  REQUIRE(kill(zygote, SIGKILL) == 0);
  REQUIRE_THROWS_WITH([&] { while (loader.next()) {} }(), Catch::Contains("zygote"));
  REQUIRE(test::wait_for_no_descendants(getpid(), 1000).empty());
}

TEST_CASE("a batch that fails the run comes after every batch before it, however early its worker got to it",
          "[fault][ordered]") {
  // Batch 5 (samples 20..23) fails. Its worker reaches it while the consumer
  // still sleeps over batch 0, so the failure is known long before batch 5
  // is due: batches 0 to 4 arrive anyway, then the error names sample 21.
  for (std::uint32_t workers : {1u, 3u}) {
    Options o = base_options(48, 4, workers);
    o.slots = 12;
    o.producer = per_sample([](const SampleRef& s) {
      if (s.index == 21) throw std::runtime_error("sample 21 is bad");
      write_sample(s);
    });
    Loader loader(o);
    std::this_thread::sleep_for(100ms);  // every worker reaches its batches, batch 5 included
    std::vector<std::uint64_t> ids;
    std::string error;
    try {
      while (auto b = loader.next()) ids.insert(ids.end(), b->sample_ids().begin(), b->sample_ids().end());
    } catch (const Error& e) {
      error = e.what();
    }
    INFO("workers " << workers << ": " << error);
    CHECK(ids.size() == 20);
    for (std::uint64_t i = 0; i < ids.size(); ++i) CHECK(ids[i] == i);
    CHECK(error.find("sample 21 is bad") != std::string::npos);
    CHECK_THROWS_AS(loader.next(), Error);  // and every later call says so
  }
}
