// workers = "auto" through the real command line: a map that waits gets more
// workers than cores, and the batches are those of a fixed worker count.
#include <catch2/catch.hpp>

#include "skip.h"

#include <sched.h>

#include <regex>
#include <string>

#include "support.h"

using Catch::Contains;
using sluice::test::CliResult;
using sluice::test::TempDir;

#ifdef SLUICE_CLI

namespace {

// 2 ms asleep per sample, as a read from a slow store would be: the CPUs idle.
const char* kWaiting = R"(local sluice = require("sluice")
local ffi = require("ffi")
ffi.cdef[[int usleep(unsigned int usec);]]
return sluice.pipeline {
  source = sluice.range(2400),
  fields = { { "x", "float32", { 4 } } },
  batch_size = 8, shuffle = true, seed = 4, workers = "auto",
  map = function(i, ctx)
    ffi.C.usleep(2000)
    local x = ctx.out.x
    for k = 0, 3 do x.data[k] = ctx.rng:normal() + i end
    return { x = x }
  end,
}
)";

}  // namespace

TEST_CASE("workers = auto grows past the cores for a map that waits, with a fixed run's batches", "[cli][auto]") {
  cpu_set_t cpus;
  REQUIRE(sched_getaffinity(0, sizeof cpus, &cpus) == 0);
  const int cores = CPU_COUNT(&cpus);
  if (2 * cores > 64) SKIP_TEST("auto starts at the " << cores << " cores, which leaves no room to grow to 64");
  TempDir dir;
  const std::string script = dir.write("waiting.lua", kWaiting);
  const std::string a = dir.path() + "/auto.jsonl", b = dir.path() + "/fixed.jsonl";

  const CliResult automatic = sluice::test::run_cli({"run", script, "--quiet", "--record", a});
  INFO(automatic.out << automatic.err);
  REQUIRE(automatic.status == 0);
  std::smatch m;
  REQUIRE(std::regex_search(automatic.out, m, std::regex(R"(batch 8, (\d+) workers \(auto\))")));
  CHECK(std::stoi(m[1]) > cores);
  CHECK_THAT(automatic.out, Contains("auto        " + std::to_string(cores) + " -> " + std::to_string(2 * cores)));

  const CliResult fixed = sluice::test::run_cli({"run", script, "--quiet", "-w", "3", "--record", b});
  REQUIRE(fixed.status == 0);
  CHECK_THAT(fixed.out, Contains("batch 8, 3 workers, ") && !Contains("auto "));
  const CliResult same = sluice::test::run_cli({"verify", a, b});
  INFO(same.out << same.err);
  CHECK(same.status == 0);

  // --workers auto on the command line, and what it accepts.
  const CliResult flag = sluice::test::run_cli({"run", script, "--quiet", "-w", "2", "--workers", "auto",
                                                "--prefetch", "auto", "--batches", "20"});
  CHECK(flag.status == 0);
  CHECK_THAT(flag.out, Contains("workers (auto)"));
  const CliResult bad = sluice::test::run_cli({"run", script, "--workers", "many"});
  CHECK(bad.status == 2);
  CHECK_THAT(bad.err, Contains("workers expects"));
  CHECK(sluice::test::wait_for_no_descendants(2000).empty());
}

#endif
