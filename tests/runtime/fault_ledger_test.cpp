// The fault policy's bookkeeping, driven directly: no processes, no arena.
// fault_test.cpp and supervision_test.cpp check the same policy end to end
// with real workers.
#include <catch2/catch.hpp>

#include <csignal>
#include <cstdint>
#include <string>
#include <vector>

#include "fault_ledger.h"
#include "zygote.h"

using namespace sluice;
using namespace sluice::detail;
using Action = FaultDecision::Action;

namespace {

FaultLedger ledger(std::uint32_t max_retries, OnError on_error, std::uint32_t workers = 4) {
  Options o;
  o.max_retries = max_retries;
  o.on_error = on_error;
  return FaultLedger(o, workers);
}

// Batch 5 of epoch 0, samples 40 to 43; the worker was on `position`.
const std::vector<std::uint64_t> kSamples = {40, 41, 42, 43};

FaultBatch batch(std::optional<std::uint32_t> position, std::uint64_t seq = 5) {
  return {seq, "epoch 0, batch " + std::to_string(seq) + " (samples 40 to 43)", kSamples, position};
}

WorkerDeath death(std::optional<std::uint32_t> position, std::uint64_t seq = 5) {
  return {1, 1234, "killed by signal 9 (Killed)", batch(position, seq)};
}

FillFailure throw_on(std::optional<std::uint32_t> position) { return {2, batch(position), "bad jpeg"}; }

}  // namespace

TEST_CASE("a crashing sample is retried max_retries - 1 times, then skipped", "[fault_ledger]") {
  FaultLedger l = ledger(3, OnError::skip);
  CHECK(l.worker_died(death(2)).action == Action::retry);
  CHECK(l.worker_died(death(2)).action == Action::retry);
  CHECK(l.sample_failures(42) == 2);
  const FaultDecision d = l.worker_died(death(2));
  CHECK(d.action == Action::skip);
  CHECK(d.samples == std::vector<std::uint64_t>{42});
  CHECK(d.reason == "failed 3 times in a row; the last time worker 1 (pid 1234) killed by signal 9 (Killed)");
  CHECK(l.batch_failures(5) == 0);  // a named sample is blamed, not its batch
}

TEST_CASE("with on_error = fail the last retry fails the run, naming the sample", "[fault_ledger]") {
  FaultLedger l = ledger(2, OnError::fail);
  CHECK(l.worker_died(death(1)).action == Action::retry);
  const FaultDecision d = l.worker_died(death(1));
  CHECK(d.action == Action::fail);
  CHECK(d.samples.empty());
  CHECK(d.reason == "sample 41 (epoch 0, batch 5 (samples 40 to 43)) failed 2 times in a row; the last time "
                    "worker 1 (pid 1234) killed by signal 9 (Killed)");
}

TEST_CASE("max_retries = 1 gives up on the first death", "[fault_ledger]") {
  FaultLedger l = ledger(1, OnError::fail);
  const FaultDecision d = l.worker_died(death(0));
  CHECK(d.action == Action::fail);
  CHECK(d.reason == "sample 40 (epoch 0, batch 5 (samples 40 to 43)) failed once (max_retries = 1): worker 1 "
                    "(pid 1234) killed by signal 9 (Killed)");
}

TEST_CASE("a death with no sample named blames the batch, and skips all of it", "[fault_ledger]") {
  // No position, or one past the batch's samples: no sample is named.
  for (std::optional<std::uint32_t> position : {std::optional<std::uint32_t>(), std::optional<std::uint32_t>(4)}) {
    FaultLedger fresh = ledger(2, OnError::skip);
    CHECK(fresh.worker_died(death(position)).action == Action::retry);
    CHECK(fresh.batch_failures(5) == 1);
    CHECK(fresh.sample_failures(40) == 0);
  }
  FaultLedger l = ledger(2, OnError::skip);
  CHECK(l.worker_died(death(std::nullopt)).action == Action::retry);
  const FaultDecision d = l.worker_died(death(std::nullopt));
  CHECK(d.action == Action::skip);
  CHECK(d.samples == kSamples);
  CHECK(d.reason == "its batch (epoch 0, batch 5 (samples 40 to 43)) failed 2 times in a row; the last time "
                    "worker 1 (pid 1234) killed by signal 9 (Killed)");
}

TEST_CASE("a death while filling no batch is retried and blames nothing", "[fault_ledger]") {
  FaultLedger l = ledger(1, OnError::fail);
  CHECK(l.worker_died({0, 99, "killed by signal 15 (Terminated)", std::nullopt}).action == Action::retry);
  CHECK(l.deaths_since_progress() == 1);
}

TEST_CASE("a completed batch clears the counts of its batch and its samples", "[fault_ledger]") {
  FaultLedger l = ledger(3, OnError::fail);
  CHECK(l.worker_died(death(1)).action == Action::retry);
  CHECK(l.worker_died(death(std::nullopt)).action == Action::retry);
  CHECK(l.worker_died(death(3, 6)).action == Action::retry);  // another batch: counted apart
  l.batch_done(5, kSamples);
  CHECK(l.sample_failures(41) == 0);
  CHECK(l.batch_failures(5) == 0);
  CHECK(l.deaths_since_progress() == 0);
  // Sample 43 was in batch 6 as well, and batch 5's success cleared it: counts are per sample.
  CHECK(l.sample_failures(43) == 0);
  // So kills spread over a run never add up: two more deaths are retried again.
  CHECK(l.worker_died(death(1)).action == Action::retry);
  CHECK(l.worker_died(death(1)).action == Action::retry);
  CHECK(l.sample_failures(41) == 2);
}

TEST_CASE("a batch done without known samples clears only the batch's count", "[fault_ledger]") {
  FaultLedger l = ledger(3, OnError::fail);
  CHECK(l.worker_died(death(1)).action == Action::retry);
  CHECK(l.worker_died(death(std::nullopt)).action == Action::retry);
  l.batch_done(5, {});  // its slot's header could not be trusted
  CHECK(l.batch_failures(5) == 0);
  CHECK(l.sample_failures(41) == 1);
}

TEST_CASE("several samples of a batch are counted and skipped one by one", "[fault_ledger]") {
  FaultLedger l = ledger(2, OnError::skip);
  CHECK(l.worker_died(death(0)).action == Action::retry);
  CHECK(l.worker_died(death(2)).action == Action::retry);
  CHECK(l.sample_failures(40) == 1);
  CHECK(l.sample_failures(42) == 1);
  FaultDecision d = l.worker_died(death(0));
  CHECK(d.action == Action::skip);
  CHECK(d.samples == std::vector<std::uint64_t>{40});
  d = l.worker_died(death(2));
  CHECK(d.action == Action::skip);
  CHECK(d.samples == std::vector<std::uint64_t>{42});
}

TEST_CASE("workers that keep dying without progress fail the run whatever on_error says", "[fault_ledger]") {
  // 2 workers x (max_retries 2 + 1) + 2 = 8 deaths are allowed; the 9th fails.
  FaultLedger l = ledger(2, OnError::skip, 2);
  for (int i = 0; i < 8; ++i) {
    CHECK(l.worker_died({0, 7, "killed by signal 9 (Killed)", std::nullopt}).action == Action::retry);
  }
  FaultDecision d = l.worker_died({1, 8, "killed by signal 9 (Killed)", std::nullopt});
  CHECK(d.action == Action::fail);
  CHECK(d.reason == "workers keep dying without finishing a batch; the last, worker 1 (pid 8), killed by "
                    "signal 9 (Killed)");
  // Any completion, a failed fill too, is progress.
  FaultLedger m = ledger(2, OnError::skip, 1);
  for (int i = 0; i < 5; ++i) CHECK(m.worker_died({0, 7, "gone", std::nullopt}).action == Action::retry);
  CHECK(m.fill_failed(throw_on(0)).action == Action::skip);
  CHECK(m.deaths_since_progress() == 0);
}

TEST_CASE("a timeout is a death: counted and retried like a crash", "[fault_ledger]") {
  FaultLedger l = ledger(2, OnError::skip);
  WorkerDeath hung = death(3);
  hung.why = "timed out after 100 ms on epoch 0, batch 5 (options.batch_timeout_ms) and was killed";
  CHECK(l.worker_died(hung).action == Action::retry);
  const FaultDecision d = l.worker_died(hung);
  CHECK(d.action == Action::skip);
  CHECK(d.samples == std::vector<std::uint64_t>{43});
  CHECK(d.reason == "failed 2 times in a row; the last time worker 1 (pid 1234) " + hung.why);
}

TEST_CASE("a producer that throws gets on_error at once", "[fault_ledger]") {
  SECTION("skip: the sample it named") {
    FaultLedger l = ledger(3, OnError::skip);
    const FaultDecision d = l.fill_failed(throw_on(1));
    CHECK(d.action == Action::skip);
    CHECK(d.samples == std::vector<std::uint64_t>{41});
    CHECK(d.reason == "bad jpeg");
    CHECK(l.sample_failures(41) == 0);  // a throw is not counted: it is deterministic
  }
  SECTION("skip: the whole batch when it named none") {
    FaultLedger l = ledger(3, OnError::skip);
    const FaultDecision d = l.fill_failed(throw_on(std::nullopt));
    CHECK(d.action == Action::skip);
    CHECK(d.samples == kSamples);
    CHECK(d.reason == "its batch failed without naming a sample: bad jpeg");
  }
  SECTION("fail: the run, naming the worker and the sample") {
    FaultLedger l = ledger(3, OnError::fail);
    const FaultDecision d = l.fill_failed(throw_on(1));
    CHECK(d.action == Action::fail);
    CHECK(d.reason == "worker 2 failed on sample 41 (epoch 0, batch 5 (samples 40 to 43)): bad jpeg");
  }
  SECTION("a batch already emptied by skips fails rather than retry forever") {
    FaultLedger l = ledger(3, OnError::skip);
    FillFailure f = throw_on(std::nullopt);
    f.batch.samples = {};
    const FaultDecision d = l.fill_failed(f);
    CHECK(d.action == Action::fail);
    CHECK(d.reason == "worker 2 failed on epoch 0, batch 5 (samples 40 to 43), which on_error = skip had "
                      "emptied: bad jpeg");
  }
}

TEST_CASE("a worker's end is told in words, a SIGBUS with its likely cause", "[fault]") {
  CHECK(sluice::detail::describe_wait_status(3 << 8) == "exited with status 3");
  CHECK(sluice::detail::describe_wait_status(SIGKILL) == "killed by signal 9 (Killed)");
  CHECK_THAT(sluice::detail::describe_wait_status(SIGBUS),
             Catch::StartsWith("killed by signal 7 (Bus error): a memory-mapped data file") &&
                 Catch::Contains("truncated or replaced while the run read it"));
}
