// Loader tests through real worker processes and the real shared-memory arena.
#include <catch2/catch.hpp>

#include <dlpack/dlpack.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstring>
#include <deque>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include "json.h"
#include "skip.h"
#include "sluice/error.h"
#include "sluice/loader.h"
#include "sluice/producer.h"
#include "test_support.h"

using namespace sluice;

namespace {

// Field 0 "id": the sample's dataset index (int64).
// Field 1 "x": 3 float32 values derived from the index, so content is checked too.
void write_id(const SampleRef& s) {
  *s.as<std::int64_t>(0) = static_cast<std::int64_t>(s.index);
  float* x = s.as<float>(1);
  for (int k = 0; k < 3; ++k) x[k] = static_cast<float>(s.index) * 0.5f + static_cast<float>(k);
}

Options id_options(std::uint64_t n, std::uint32_t batch, std::uint32_t workers) {
  Options o;
  o.dataset_size = n;
  o.batch_size = batch;
  o.workers = workers;
  o.fields = {{"id", DType::i64, {}}, {"x", DType::f32, {3}}};
  o.producer = per_sample(write_id);
  return o;
}

// Checks a batch's fields against its sample ids and returns the ids.
std::vector<std::uint64_t> checked_ids(const Batch& b) {
  std::vector<std::uint64_t> ids(b.sample_ids().begin(), b.sample_ids().end());
  FieldView id = b.field("id");
  FieldView x = b.field(1);
  REQUIRE(id.shape.size() == 1);
  REQUIRE(static_cast<std::size_t>(id.shape[0]) == b.size());
  REQUIRE(x.shape.size() == 2);
  REQUIRE(x.shape[1] == 3);
  REQUIRE(x.strides[0] == 3);
  REQUIRE(x.nbytes == b.size() * 3 * sizeof(float));
  auto idv = id.as<const std::int64_t>();
  auto xv = x.as<const float>();
  for (std::size_t j = 0; j < ids.size(); ++j) {
    REQUIRE(idv[j] == static_cast<std::int64_t>(ids[j]));
    REQUIRE(xv[j * 3 + 2] == static_cast<float>(ids[j]) * 0.5f + 2.0f);
  }
  return ids;
}

// A counter in memory shared with the workers (MAP_SHARED | MAP_ANONYMOUS,
// mapped before the Loader forks them).
struct SharedCounter {
  std::atomic<std::int64_t>* value;
  SharedCounter() {
    void* p = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    REQUIRE(p != MAP_FAILED);
    value = new (p) std::atomic<std::int64_t>(0);
  }
  ~SharedCounter() { munmap(value, 4096); }
};

}  // namespace

TEST_CASE("ordered delivery is the plan, each sample exactly once per epoch", "[loader]") {
  const std::uint32_t workers = GENERATE(1u, 2u, 4u, 8u);
  const bool shuffle = GENERATE(false, true);
  const bool drop_last = GENERATE(false, true);
  const std::uint64_t n = 103;  // ragged: 103 = 12 * 8 + 7
  Options o = id_options(n, 8, workers);
  o.shuffle = shuffle;
  o.seed = 42;
  o.drop_last = drop_last;
  o.epochs = 3;
  CAPTURE(workers, shuffle, drop_last);

  Loader loader(o);
  const EpochPlan& plan = loader.plan();
  REQUIRE(plan.batches_per_epoch() == (drop_last ? 12u : 13u));
  std::vector<std::vector<std::uint64_t>> epoch_orders;
  for (std::uint64_t e = 0; e < 3; ++e) {
    REQUIRE(loader.current_epoch() == e);
    std::vector<std::uint64_t> order;
    std::uint64_t expect_index = 0;
    for (Batch& b : loader.epoch()) {
      REQUIRE(b.epoch() == e);
      REQUIRE(b.index() == expect_index++);
      auto ids = checked_ids(b);
      REQUIRE(ids.size() == plan.batch_length(b.index()));
      for (std::size_t j = 0; j < ids.size(); ++j) REQUIRE(ids[j] == plan.sample(e, b.index() * 8 + j));
      order.insert(order.end(), ids.begin(), ids.end());
    }
    REQUIRE(expect_index == plan.batches_per_epoch());
    std::vector<std::uint64_t> sorted = order;
    std::sort(sorted.begin(), sorted.end());
    REQUIRE(std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end());  // never twice
    REQUIRE(sorted.size() == (drop_last ? 96u : n));
    if (!drop_last) {
      for (std::uint64_t i = 0; i < n; ++i) REQUIRE(sorted[i] == i);  // every sample once
    }
    epoch_orders.push_back(order);
  }
  REQUIRE_FALSE(loader.next().has_value());
  if (shuffle) {
    REQUIRE(epoch_orders[0] != epoch_orders[1]);  // a fresh permutation per epoch
  } else {
    REQUIRE(epoch_orders[0] == epoch_orders[1]);
  }
}

TEST_CASE("unordered delivery yields the same batches, epoch by epoch", "[loader]") {
  const std::uint32_t workers = GENERATE(2u, 4u);
  Options o = id_options(250, 7, workers);
  o.shuffle = true;
  o.seed = 7;
  o.epochs = 2;
  // Uneven work so that completions really come out of order.
  o.producer = per_sample([](const SampleRef& s) {
    if (s.index % 5 == 0 && s.position == 0) std::this_thread::sleep_for(std::chrono::microseconds(300));
    *s.as<std::int64_t>(0) = static_cast<std::int64_t>(s.index);
    float* x = s.as<float>(1);
    for (int k = 0; k < 3; ++k) x[k] = static_cast<float>(s.index) * 0.5f + static_cast<float>(k);
  });

  std::map<std::pair<std::uint64_t, std::uint64_t>, std::vector<std::uint64_t>> ordered, unordered;
  {
    Loader loader(o);
    while (auto b = loader.next()) ordered[{b->epoch(), b->index()}] = checked_ids(*b);
  }
  o.ordered = false;
  bool out_of_order = false;
  {
    Loader loader(o);
    std::uint64_t last_epoch = 0, expect = 0;
    while (auto b = loader.next()) {
      REQUIRE(b->epoch() >= last_epoch);  // never a batch of the next epoch early
      last_epoch = b->epoch();
      if (b->index() != expect % loader.plan().batches_per_epoch()) out_of_order = true;
      ++expect;
      unordered[{b->epoch(), b->index()}] = checked_ids(*b);
    }
  }
  REQUIRE(ordered == unordered);
  REQUIRE(ordered.size() == 2 * 36);
  if (!out_of_order) WARN("completions happened to arrive in order on this run");
}

TEST_CASE("prefetch is bounded by slots and fills them while the consumer is busy", "[loader][backpressure]") {
  SharedCounter started;
  Options o = id_options(400, 4, 2);
  o.slots = 5;
  o.producer = per_sample([counter = started.value](const SampleRef& s) {
    if (s.position == 0) counter->fetch_add(1);
    *s.as<std::int64_t>(0) = static_cast<std::int64_t>(s.index);
    float* x = s.as<float>(1);
    for (int k = 0; k < 3; ++k) x[k] = static_cast<float>(s.index) * 0.5f + static_cast<float>(k);
  });
  Loader loader(o);
  std::int64_t released = 0;
  for (int i = 0; i < 30; ++i) {
    auto b = loader.next();
    REQUIRE(b);
    checked_ids(*b);
    // A slow consumer: give the workers every chance to run ahead.
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    // Batches started minus batches released never exceeds the slots.
    REQUIRE(started.value->load() - released <= 5);
    b->release();
    ++released;
  }
  const Stats stats = loader.stats();
  REQUIRE(stats.max_in_flight == 5);
  // The consumer was the bottleneck: slots were full most of its 150 ms of
  // sleep, and the workers mostly idle.
  REQUIRE(stats.slots_full_ns > 75'000'000);
  REQUIRE(stats.worker_idle_ns > stats.worker_fill_ns);
  REQUIRE(stats.worker_fill_ns > 0);
  REQUIRE(stats.first_batch_ns > 0);

  // While the consumer slept, the workers filled every free slot: the next
  // four batches are ready without waiting.
  const std::uint64_t waits = loader.stats().consumer_waits;
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  std::vector<Batch> held;
  for (int i = 0; i < 4; ++i) held.push_back(*loader.next());
  REQUIRE(loader.stats().consumer_waits == waits);
}

namespace {

// The times process `pid` went to sleep of its own accord (/proc/PID/status).
long voluntary_switches(int pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("voluntary_ctxt_switches:", 0) == 0) return std::stol(line.substr(line.find(':') + 1));
  }
  return -1;
}

}  // namespace

TEST_CASE("a consumer slower than its worker wakes it once a burst of slots, not once a batch", "[loader][backpressure]") {
  if (test::proc_shows_emulator_signal_state()) {
    SKIP_TEST("/proc/PID/status describes the emulator's threads (qemu-user), not the worker's sleeps");
  }
  Options o = id_options(300, 1, 1);
  o.slots = 32;  // bursts of 8
  Loader loader(o);
  std::set<std::uint64_t> seen;
  long switches = 0;
  for (int i = 0; i < 300; ++i) {
    auto b = loader.next();
    REQUIRE(b);
    for (std::uint64_t id : checked_ids(*b)) REQUIRE(seen.insert(id).second);
    // Longer than a worker polls (50 us): it sleeps between the batches it is given.
    std::this_thread::sleep_for(std::chrono::microseconds(300));
    if (i == 298) switches = voluntary_switches(loader.worker_pids().at(0));  // the worker still runs
  }
  REQUIRE(seen.size() == 300);
  REQUIRE(!loader.next());
  // Woken once a batch, it would have slept ~300 times; once a burst of 8, ~40.
  INFO("the worker slept " << switches << " times");
  REQUIRE(switches >= 0);
  REQUIRE(switches < 300 / 4);
}

TEST_CASE("a slow consumer that holds batches, freeing one at a time, gets every batch while its worker sleeps", "[loader][backpressure]") {
  // 10 of 32 slots held, one freed for each taken: the rest (issued or ready)
  // stay above half the slots, so free slots wait for a burst of 8 while the
  // worker sleeps between them (issue_now). Then most held: no wait at all.
  for (const std::size_t keep : {std::size_t{10}, std::size_t{29}}) {
    Options o = id_options(300, 1, 2);
    o.slots = 32;
    Loader loader(o);
    std::set<std::uint64_t> seen;
    std::deque<Batch> held;
    for (int i = 0; i < 300; ++i) {
      auto b = loader.next_for(std::chrono::seconds(30));
      REQUIRE(b);
      for (std::uint64_t id : checked_ids(*b)) REQUIRE(seen.insert(id).second);
      held.push_back(std::move(*b));
      if (held.size() > keep) held.pop_front();
      std::this_thread::sleep_for(std::chrono::microseconds(200));  // slower than the workers: they sleep
    }
    REQUIRE(seen.size() == 300);
    REQUIRE(!loader.next_for(std::chrono::seconds(30)));
  }
}

TEST_CASE("held batches block the pipeline only up to slots, and released ones free it", "[loader][backpressure]") {
  Options o = id_options(64, 2, 2);
  o.slots = 3;
  o.epochs = 0;  // endless
  Loader loader(o);
  std::vector<Batch> held;
  for (int i = 0; i < 3; ++i) held.push_back(*loader.next());
  // Every slot is held: releasing one on another thread lets next() go on.
  std::thread releaser([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    held[0].release();
  });
  auto b = loader.next();
  releaser.join();
  REQUIRE(b);
  REQUIRE(b->index() == 3);
}

TEST_CASE("push style and batches that outlive the loader", "[loader]") {
  Options o = id_options(20, 6, 2);
  o.epochs = 2;
  std::vector<std::uint64_t> seen;
  std::optional<Batch> kept;
  {
    Loader loader(o);
    loader.run([&](Batch& b) {
      auto ids = checked_ids(b);
      seen.insert(seen.end(), ids.begin(), ids.end());
      if (b.epoch() == 1 && b.index() == 0) kept = std::move(b);
    });
    REQUIRE(loader.stats().batches_delivered == 8);
    REQUIRE(loader.stats().samples_delivered == 40);
  }
  REQUIRE(seen.size() == 40);
  // The loader is gone; the batch's slot and its data are still there.
  REQUIRE(kept);
  REQUIRE(checked_ids(*kept) == std::vector<std::uint64_t>{0, 1, 2, 3, 4, 5});
}

TEST_CASE("DLPack export keeps the slot alive and describes the field", "[loader][dlpack]") {
  Options o = id_options(10, 4, 1);
  o.slots = 2;
  Loader loader(o);
  DLManagedTensor* t = nullptr;
  {
    Batch b = *loader.next();
    t = b.to_dlpack(1);
  }
  REQUIRE(t->dl_tensor.ndim == 2);
  REQUIRE(t->dl_tensor.shape[0] == 4);
  REQUIRE(t->dl_tensor.shape[1] == 3);
  REQUIRE(t->dl_tensor.dtype.code == kDLFloat);
  REQUIRE(t->dl_tensor.dtype.bits == 32);
  REQUIRE(t->dl_tensor.device.device_type == kDLCPU);
  // The tensor still holds its slot: with 2 slots, one more batch can be held,
  // and its data is not overwritten.
  Batch b1 = *loader.next();
  REQUIRE(static_cast<float*>(t->dl_tensor.data)[3 * 3 + 1] == 3 * 0.5f + 1.0f);
  t->deleter(t);
  Batch b2 = *loader.next();  // the slot came back
  REQUIRE(b2.index() == 2);
}

TEST_CASE("destroying a loader mid-epoch leaves no process and no /dev/shm entry", "[loader][shutdown]") {
  const auto shm_before = test::dev_shm_entries();
  REQUIRE(test::descendants(getpid()).empty());
  {
    Options o = id_options(1000000, 16, 4);
    o.epochs = 0;
    Loader loader(o);
    REQUIRE(test::descendants(getpid()).size() == 5);  // the zygote and four workers
    for (int i = 0; i < 10; ++i) REQUIRE(loader.next());
  }
  // The destructor reaped everything before returning: nothing to wait for.
  REQUIRE(test::descendants(getpid()).empty());
  REQUIRE(test::dev_shm_entries() == shm_before);
}

TEST_CASE("a producer error reaches the consumer with worker, epoch and batch", "[loader][errors]") {
  Options o = id_options(100, 10, 2);
  o.producer = per_sample([](const SampleRef& s) {
    if (s.index == 57) throw std::runtime_error("sample 57 is broken");
    *s.as<std::int64_t>(0) = static_cast<std::int64_t>(s.index);
  });
  Loader loader(o);
  std::string message;
  try {
    while (loader.next()) {
    }
  } catch (const Error& e) {
    message = e.what();
  }
  REQUIRE_THAT(message, Catch::Contains("sample 57 is broken") && Catch::Contains("epoch 0, batch 5") &&
                            Catch::Contains("worker"));
  // The loader stays failed, and its workers are already gone.
  REQUIRE_THROWS_AS(loader.next(), Error);
  REQUIRE(test::descendants(getpid()).empty());
}

TEST_CASE("a worker that fails to start is reported", "[loader][errors]") {
  struct BadStart : Producer {
    void start_worker(std::uint32_t id) override {
      if (id == 1) throw std::runtime_error("cannot open the dataset");
    }
    void fill(BatchContext&) override {}
  };
  Options o = id_options(100, 10, 2);
  o.producer = std::make_shared<BadStart>();
  Loader loader(o);
  REQUIRE_THROWS_WITH([&] { while (loader.next()) {} }(),
                      Catch::Contains("worker 1") && Catch::Contains("cannot open the dataset"));
}

TEST_CASE("a worker killed by a signal fails the run at once, naming it", "[loader][errors]") {
  Options o = id_options(1000, 10, 2);
  o.producer = per_sample([](const SampleRef& s) {
    if (s.index == 333) raise(SIGKILL);
    *s.as<std::int64_t>(0) = static_cast<std::int64_t>(s.index);
  });
  Loader loader(o);
  auto start = std::chrono::steady_clock::now();
  REQUIRE_THROWS_WITH([&] { while (loader.next()) {} }(), Catch::Contains("killed by signal 9"));
  REQUIRE(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
  REQUIRE(test::descendants(getpid()).empty());
}

TEST_CASE("options are validated with messages naming the option", "[loader][errors]") {
  Options o = id_options(100, 10, 2);
  o.slot_bytes = 100;
  REQUIRE_THROWS_WITH(Loader(o), Catch::Contains("options.slot_bytes") && Catch::Contains("needs"));
  o = id_options(0, 10, 2);
  REQUIRE_THROWS_WITH(Loader(o), Catch::Contains("dataset_size"));
  o = id_options(100, 10, 0);
  REQUIRE_THROWS_WITH(Loader(o), Catch::Contains("workers"));
  o = id_options(100, 10, 2);
  o.producer = nullptr;
  REQUIRE_THROWS_WITH(Loader(o), Catch::Contains("producer"));
  o = id_options(5, 10, 2);
  o.drop_last = true;
  REQUIRE_THROWS_WITH(Loader(o), Catch::Contains("no batch"));
  REQUIRE(test::descendants(getpid()).empty());
}

TEST_CASE("ranks of a sharded run see disjoint samples and the same batch count", "[loader][shard]") {
  const std::uint32_t world = 3;
  std::set<std::uint64_t> all;
  std::uint64_t batches_rank0 = 0;
  for (std::uint32_t rank = 0; rank < world; ++rank) {
    Options o = id_options(100, 8, 2);
    o.shuffle = true;
    o.seed = 3;
    o.rank = rank;
    o.world_size = world;
    o.shard_policy = ShardPolicy::drop;
    Loader loader(o);
    std::uint64_t batches = 0;
    while (auto b = loader.next()) {
      ++batches;
      for (std::uint64_t id : checked_ids(*b)) REQUIRE(all.insert(id).second);
    }
    if (rank == 0) batches_rank0 = batches;
    REQUIRE(batches == batches_rank0);
  }
  REQUIRE(all.size() == 99);  // 100 // 3 * 3: one sample dropped by policy
}

TEST_CASE("workers are told of the batches they hold before they fill them, for read-ahead", "[loader]") {
  // Each batch records how many batches its worker had been told of when its
  // fill began: with several batches queued, that runs ahead of the fills.
  struct Announced : Producer {
    std::uint64_t announced = 0;
    void upcoming(std::uint64_t, std::uint64_t, std::span<const std::uint64_t> samples) override {
      if (!samples.empty()) ++announced;
    }
    void fill(BatchContext& b) override {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      for (std::size_t j = 0; j < b.size(); ++j) *b.as<std::int64_t>(0, j) = static_cast<std::int64_t>(announced);
    }
  };
  Options o = id_options(200, 10, 1);
  o.fields = {{"announced", DType::i64, {}}};
  o.slots = 6;
  o.producer = std::make_shared<Announced>();
  Loader loader(o);
  std::int64_t most_ahead = 0;
  std::int64_t filled = 0;
  while (auto b = loader.next()) {
    ++filled;
    most_ahead = std::max(most_ahead, b->field(0).as<const std::int64_t>()[0] - filled);
  }
  REQUIRE(filled == 20);
  REQUIRE(most_ahead >= 3);  // announced at least three batches beyond the one being filled
}

TEST_CASE("field sizes that overflow are refused before anything is allocated", "[loader][options]") {
  Options o = id_options(10, 4, 1);
  o.fields = {{"huge", DType::f64, {std::int64_t{1} << 31, std::int64_t{1} << 31, 8}}};
  REQUIRE_THROWS_WITH(Loader(o), Catch::Contains("field 'huge'") && Catch::Contains("2^62"));
  o.fields = {{"huge", DType::u8, {std::int64_t{1} << 40}}};
  o.batch_size = 1u << 30;
  REQUIRE_THROWS_WITH(Loader(o), Catch::Contains("2^62"));
}

TEST_CASE("with skip_fill = repeat a batch keeps its size when samples are skipped", "[loader][faults]") {
  Options o = id_options(40, 8, 2);
  o.on_error = OnError::skip;
  o.skip_fill = SkipFill::repeat;
  o.producer = per_sample([](const SampleRef& s) {
    if (s.index == 9 || s.index == 10) throw Error("bad sample " + std::to_string(s.index));
    write_id(s);
  });
  Loader loader(o);
  std::vector<std::vector<std::uint64_t>> batches;
  while (auto b = loader.next()) batches.push_back(checked_ids(*b));
  REQUIRE(batches.size() == 5);
  for (const auto& ids : batches) REQUIRE(ids.size() == 8);
  REQUIRE(batches[1] == std::vector<std::uint64_t>{8, 11, 12, 13, 14, 15, 8, 11});
  const Stats stats = loader.stats();
  REQUIRE(stats.skipped_samples == std::vector<std::uint64_t>{9, 10});
  REQUIRE(stats.skip_reasons.size() == 2);
  REQUIRE_THAT(stats.skip_reasons[0], Catch::Contains("bad sample 9"));
}

TEST_CASE("a batch whose every sample is skipped is not delivered", "[loader][faults]") {
  Options o = id_options(12, 4, 1);
  o.on_error = OnError::skip;
  o.producer = per_sample([](const SampleRef& s) {
    if (s.index >= 4 && s.index < 8) throw Error("bad");
    write_id(s);
  });
  Loader loader(o);
  std::vector<std::uint64_t> indices;
  while (auto b = loader.next()) {
    REQUIRE(b->size() > 0);
    indices.push_back(b->index());
  }
  // Batch 1 fails one sample at a time; once all four are skipped it is empty.
  REQUIRE(indices == std::vector<std::uint64_t>{0, 2});
  REQUIRE(loader.stats().empty_batches == 1);
  REQUIRE(loader.stats().skipped_samples.size() == 4);
}

TEST_CASE("next_for bounded to an epoch stops there when the epoch's last batch was skipped", "[loader][faults]") {
  Options o = id_options(12, 4, 2);
  o.epochs = 2;
  o.on_error = OnError::skip;
  o.producer = per_sample([](const SampleRef& s) {
    if (s.index >= 8) throw Error("bad");  // batch 2 of each epoch
    write_id(s);
  });
  Loader loader(o);
  for (std::uint64_t epoch = 0; epoch < 2; ++epoch) {
    std::vector<std::uint64_t> indices;
    while (!loader.finished() && loader.current_epoch() <= epoch) {
      if (auto b = loader.next_for(std::chrono::milliseconds(20), epoch)) {
        REQUIRE(b->epoch() == epoch);
        indices.push_back(b->index());
      }
    }
    REQUIRE(indices == std::vector<std::uint64_t>{0, 1});
    // The next epoch's first batch is still the loader's, so a state taken
    // here resumes with it.
    const LoaderState state = loader.state();
    REQUIRE(state.epoch == epoch + 1);
    REQUIRE(state.batch == 0);
  }
  REQUIRE(loader.finished());
}

TEST_CASE("Stats::to_json holds every field by its name, strings escaped", "[loader]") {
  sluice::Stats s;
  s.batches_delivered = 7;
  s.worker_runqueue_ns = std::uint64_t{1} << 63;  // exact: numbers stay integers
  s.skipped_samples = {3, 9};
  s.skip_reasons = {"map failed: \"x\"\n", "crashed"};
  s.workers = 4;
  s.autotune = "2 -> 4 workers";
  const sluice::detail::JsonValue j = sluice::detail::parse_json(s.to_json());
  CHECK(j.at("batches_delivered").as_u64("") == 7);
  CHECK(j.at("worker_runqueue_ns").as_u64("") == std::uint64_t{1} << 63);
  CHECK(j.at("skipped_samples").as_array("").size() == 2);
  CHECK(j.at("skip_reasons").as_array("")[0].as_string("") == "map failed: \"x\"\n");
  CHECK(j.at("workers").as_u64("") == 4);
  CHECK(j.at("autotune").as_string("") == "2 -> 4 workers");
  for (const char* key : {"samples_delivered", "bytes_delivered", "consumer_wait_ns", "consumer_waits", "max_in_flight",
                          "first_batch_ns", "slots_full_ns", "worker_fill_ns", "worker_idle_ns", "worker_cpu_ns",
                          "worker_restarts", "batches_retried", "empty_batches"}) {
    CHECK(j.at(key).as_u64(key) == 0);
  }
  CHECK(j.members.size() == 19);
}
