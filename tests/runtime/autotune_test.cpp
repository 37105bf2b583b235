// Auto workers (Options::max_workers): the tuner's decisions on measured
// windows, and a real loader that grows its worker processes for a producer
// that waits, delivering the very batches a fixed worker count delivers.
#include <catch2/catch.hpp>

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <random>
#include <thread>
#include <vector>

#include "autotune.h"
#include "sluice/loader.h"
#include "sluice/producer.h"
#include "test_support.h"

using namespace sluice;
using detail::AutoTuner;
using detail::TuneSample;

namespace {

constexpr std::uint64_t kMs = 1'000'000;

// Feeds the tuner windows of 400 ms at `rate` batches/s with the workers' CPU
// and the consumer's waits as shares of the window; returns its count.
struct Feed {
  AutoTuner tuner;
  TuneSample s{};
  std::uint32_t window(double rate, double cpu_cores, double wait_share) {
    s.now_ns += 400 * kMs;
    s.batches += static_cast<std::uint64_t>(rate * 0.4);
    s.worker_cpu_ns += static_cast<std::uint64_t>(cpu_cores * 400 * kMs);
    s.consumer_wait_ns += static_cast<std::uint64_t>(wait_share * 400 * kMs);
    return tuner.observe(s);
  }
  std::uint32_t settle() {  // the window after a change is left out
    s.now_ns += AutoTuner::kSettleNs;
    return tuner.observe(s);
  }
};

}  // namespace

TEST_CASE("the tuner doubles workers while throughput follows, and keeps the better of the last two", "[autotune]") {
  Feed f{AutoTuner(2, 64, 2)};
  f.tuner.observe(f.s);                    // the first batch
  CHECK(f.window(100, 0.2, 0.9) == 4);     // waiting, CPU idle: grow
  f.settle();
  CHECK(f.window(200, 0.4, 0.9) == 8);     // x2: grow again
  f.settle();
  CHECK(f.window(390, 0.8, 0.8) == 16);
  f.settle();
  CHECK(f.window(400, 0.8, 0.5) == 16);    // x1.03: no more gain, 16 delivered more
  CHECK(f.tuner.settled());
  CHECK(f.tuner.summary() == "2 -> 4 -> 8 -> 16 workers, kept 16 (x1.03 over 8: no more gain)");
  CHECK(f.window(1000, 0.1, 0.9) == 16);   // settled for good

  Feed worse{AutoTuner(2, 64, 2)};
  worse.tuner.observe(worse.s);
  CHECK(worse.window(100, 0.2, 0.9) == 4);
  worse.settle();
  CHECK(worse.window(90, 0.3, 0.9) == 2);  // more workers delivered less: back to 2
  CHECK(worse.tuner.summary() == "2 -> 4 workers, kept 2 (x0.90 over 2: no more gain)");
}

TEST_CASE("the tuner keeps the workers of a consumer-bound or CPU-bound run", "[autotune]") {
  Feed consumer{AutoTuner(2, 64, 2)};
  consumer.tuner.observe(consumer.s);
  CHECK(consumer.window(1000, 0.5, 0.02) == 2);
  CHECK(consumer.tuner.summary() == "2 workers, kept 2 (the consumer waited 2% of the time: not bound by workers)");

  Feed cpu{AutoTuner(2, 64, 2)};
  cpu.tuner.observe(cpu.s);
  CHECK(cpu.window(100, 1.9, 0.9) == 2);
  CHECK(cpu.tuner.summary() == "2 workers, kept 2 (workers used 95% of 2 cores)");

  Feed capped{AutoTuner(2, 3, 2)};
  capped.tuner.observe(capped.s);
  CHECK(capped.window(100, 0.1, 0.9) == 3);
  capped.settle();
  CHECK(capped.window(150, 0.1, 0.9) == 3);
  CHECK(capped.tuner.summary() == "2 -> 3 workers, kept 3 (the maximum, 3)");
}

namespace {

// Each sample waits 2 ms off-CPU (as for I/O): two workers leave the CPUs idle.
Options waiting_options(std::uint32_t workers, std::uint32_t max_workers) {
  Options o;
  o.dataset_size = 8 * 400;
  o.batch_size = 8;
  o.shuffle = true;
  o.seed = 9;
  o.workers = workers;
  o.max_workers = max_workers;
  o.fields = {{"id", DType::i64, {}}, {"x", DType::f32, {4}}};
  o.producer = per_sample([](const SampleRef& s) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    *s.as<std::int64_t>(0) = static_cast<std::int64_t>(s.index);
    for (int k = 0; k < 4; ++k) s.as<float>(1)[k] = static_cast<float>(s.index) * 0.25f + static_cast<float>(k);
  });
  return o;
}

// Every batch's sample ids and field bytes, in delivery order; after_batch(i) runs after batch i.
std::vector<std::vector<unsigned char>> drain(Loader& loader, const std::function<void(std::size_t)>& after_batch = {}) {
  std::vector<std::vector<unsigned char>> batches;
  while (std::optional<Batch> b = loader.next()) {
    std::vector<unsigned char> bytes(b->sample_ids().size() * 8);
    std::memcpy(bytes.data(), b->sample_ids().data(), bytes.size());
    for (std::size_t f = 0; f < b->field_count(); ++f) {
      const FieldView v = b->field(f);
      bytes.insert(bytes.end(), static_cast<const unsigned char*>(v.data),
                   static_cast<const unsigned char*>(v.data) + v.nbytes);
    }
    batches.push_back(std::move(bytes));
    if (after_batch) after_batch(batches.size() - 1);
  }
  return batches;
}

}  // namespace

TEST_CASE("auto workers grow for a producer that waits, and deliver the batches of fixed workers", "[autotune][loader]") {
  Loader automatic(waiting_options(2, 32));
  const auto got = drain(automatic);
  const Stats stats = automatic.stats();
  INFO(stats.autotune);
  CHECK(stats.workers > 2);
  CHECK(automatic.worker_pids().size() >= stats.workers);
  CHECK(stats.autotune.starts_with("2 -> 4"));

  Loader fixed(waiting_options(8, 0));
  CHECK(fixed.stats().workers == 8);
  CHECK(fixed.stats().autotune.empty());
  CHECK(got == drain(fixed));  // the same batches, in the same order
  CHECK(got.size() == 400);
}

TEST_CASE("kill -9 of workers while auto grows them changes nothing the consumer sees", "[autotune][chaos]") {
  Loader fixed(waiting_options(4, 0));
  const auto clean = drain(fixed);
  const std::string error = test::in_child(
      [&] {
        std::mt19937 rng(7);
        Loader loader(waiting_options(2, 32));
        const auto got = drain(loader, [&](std::size_t i) {
          if (i % 40 != 39) return;
          const std::vector<int> pids = loader.worker_pids();  // grown ones included
          kill(pids[rng() % pids.size()], SIGKILL);
        });
        const Stats s = loader.stats();
        if (s.worker_restarts == 0) return std::string("no worker was killed");
        if (s.workers <= 2) return "auto did not grow: " + s.autotune;
        return got == clean ? std::string() : std::string("the batches differ from a fixed run's");
      },
      60'000);
  CHECK(error.empty());
  INFO(error);
}

TEST_CASE("auto workers size the slots for the most workers, within memory_budget_mb", "[autotune][loader]") {
  Options o;
  o.dataset_size = 64;
  o.batch_size = 4;
  o.workers = 2;
  o.max_workers = 32;
  o.fields = {{"x", DType::u8, {1 << 20}}};  // 4 MiB slots
  o.producer = per_sample([](const SampleRef& s) { s.as<std::uint8_t>(0)[0] = 1; });
  o.memory_budget_mb = 41;  // 10 slots (of 4 MiB and a header): room for 4 workers, 2 slots each, plus 2
  Loader budget(o);
  CHECK(budget.slots() == 10);
  while (budget.next()) {
  }
  CHECK(budget.worker_pids().size() <= 4);

  o.memory_budget_mb = 1;  // less than the start needs: the start's 2 x 2 + 2 slots, and no growth
  Loader tight(o);
  CHECK(tight.slots() == 6);
  CHECK(tight.stats().autotune == "2 workers, kept 2 (the maximum, 2)");

  o.memory_budget_mb = 1024;
  o.slots = 0;
  Loader roomy(o);
  CHECK(roomy.slots() == 2 * 32 + 2);
}
