// `sluice run`'s verdict on real pipelines: a map that waits (as I/O does) is
// told apart from one that computes, by the workers' CPU time.
#include <catch2/catch.hpp>

#include <sched.h>

#include <algorithm>
#include <string>

#include "support.h"
#include "verdict.h"

using Catch::Contains;
using sluice::test::CliResult;
using sluice::test::TempDir;

#ifdef SLUICE_CLI

namespace {

std::string pipeline(const std::string& map_body, int samples, int workers, int batch_size) {
  return R"(local sluice = require("sluice")
local ffi = require("ffi")
ffi.cdef[[int usleep(unsigned int usec);]]
return sluice.pipeline {
  source = sluice.range()" + std::to_string(samples) + R"(),
  fields = { { "x", "float32", { 4 } } },
  batch_size = )" + std::to_string(batch_size) + R"(, epochs = 1, workers = )" + std::to_string(workers) + R"(,
  map = function(i, ctx)
    local x = ctx.out.x
)" + map_body + R"(
    return { x = x }
  end,
}
)";
}

// 5 ms asleep per sample, as a read from a slow disk would be.
const char* kSleepingMap = "    ffi.C.usleep(5000)\n    x.data[0] = i\n";
// About 2 ms of arithmetic per sample (0.7 s for the run on an idle core), never off the CPU.
const char* kComputingMap =
    "    local acc = 0\n"
    "    for k = 1, 200000 do acc = (acc + k * i) % 1000003 end\n"
    "    x.data[0] = acc\n";

}  // namespace

TEST_CASE("sluice run: a map that sleeps is waiting, with a worker count to try", "[cli][verdict]") {
  TempDir dir;
  for (int workers : {2, 4}) {
    const std::string script = dir.write("sleep.lua", pipeline(kSleepingMap, 60 * workers * 2, workers, 2));
    const CliResult r = sluice::test::run_cli({"run", script, "--quiet"});
    INFO(r.out << r.err);
    REQUIRE(r.status == 0);
    CHECK_THAT(r.out, Contains("verdict     waiting: ") && Contains("off-CPU") && Contains("try --workers "));
    CHECK_THAT(r.out, !Contains("compute-bound"));
    CHECK_THAT(r.out, Contains("of that, "));
  }
}

TEST_CASE("sluice run: a map that computes is compute-bound", "[cli][verdict]") {
  TempDir dir;
  const std::string script = dir.write("cpu.lua", pipeline(kComputingMap, 400, 1, 4));
  const CliResult r = sluice::test::run_cli({"run", script, "--quiet"});
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.out, Contains("verdict     compute-bound: "));
}

TEST_CASE("the verdict of a run whose workers wait for a CPU another process holds", "[cli][verdict]") {
  // As a new user's run beside two busy loops measured it: the consumer
  // waiting all of the run, workers filling 61% of theirs, 41% of that in
  // the run queue, all 24 slots taken 92% of the time. Not "try a larger
  // --prefetch", which changed nothing.
  sluice::cli::RunMeasures m;
  m.wall_s = 1.4;
  m.batches = 500;
  m.workers = 2;
  m.slots = 24;
  m.slots_given = true;
  m.cores = 2;
  m.fill_ns = static_cast<std::uint64_t>(0.61 * 2 * 1.4e9);
  m.runqueue_ns = static_cast<std::uint64_t>(0.41 * static_cast<double>(m.fill_ns));
  m.cpu_ns = m.fill_ns - m.runqueue_ns;
  m.consumer_wait_ns = static_cast<std::uint64_t>(1.4e9);
  m.slots_full_ns = static_cast<std::uint64_t>(0.92 * 1.4e9);
  const std::string contended = sluice::cli::verdict(m);
  CHECK_THAT(contended, Contains("CPU-contended: ") && Contains("waited for a CPU 41%") && !Contains("--prefetch"));
  // The same run without the queue for the cores: its slots are the bound.
  m.cpu_ns = m.fill_ns;
  m.runqueue_ns = 0;
  CHECK_THAT(sluice::cli::verdict(m), Contains("delivery-bound: ") && Contains("try a larger --prefetch"));
}

TEST_CASE("more workers than cores: a warning for a count given, none for one --workers auto measured", "[cli][verdict]") {
  sluice::cli::RunMeasures m;
  m.wall_s = 2;
  m.batches = 400;
  m.workers = 4;
  m.slots = 10;
  m.cores = 2;
  m.fill_ns = m.cpu_ns = 7'000'000'000;  // CPU work
  m.consumer_wait_ns = 1'900'000'000;
  const auto given = sluice::cli::run_warnings(m);
  REQUIRE(given.size() == 1);
  CHECK_THAT(given[0], Contains("4 workers on 2 cores") && Contains("try --workers 2"));
  m.workers_tuned = true;  // "auto 2 -> 4 -> 8 workers, kept 4": measured faster than 2
  CHECK(sluice::cli::run_warnings(m).empty());
}

TEST_CASE("sluice run: a run too short to judge gets no verdict, and says why", "[cli][verdict]") {
  TempDir dir;
  const std::string script = dir.write("short.lua", pipeline("", 16, 1, 4));
  const CliResult r = sluice::test::run_cli({"run", script, "--quiet"});
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.out, Contains("verdict     none: the run was too short to judge") && Contains("4 batches"));
  CHECK_THAT(r.out, !Contains("delivery-bound"));
}

TEST_CASE("sluice run warns of more workers than cores and fewer slots than workers", "[cli][verdict]") {
  TempDir dir;
  cpu_set_t set;
  CPU_ZERO(&set);
  REQUIRE(sched_getaffinity(0, sizeof set, &set) == 0);
  const int workers = std::max(64, CPU_COUNT(&set) + 1);
  const std::string script = dir.write("many.lua", pipeline("", 256, 1, 4));
  const CliResult r =
      sluice::test::run_cli({"run", script, "--quiet", "--workers", std::to_string(workers), "--prefetch", "8"});
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.out, Contains("warning     " + std::to_string(workers) + " workers on ") && Contains(" cores:"));
  CHECK_THAT(r.out, Contains("warning     8 slots for " + std::to_string(workers) + " workers"));
  CHECK(sluice::test::wait_for_no_descendants(5000).empty());
}

#endif  // SLUICE_CLI
