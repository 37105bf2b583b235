// A Lua map that hangs, crashes its worker, or leaks memory on one sample:
// each ends as --on-error says, through `sluice run`, with no process left.
#include <catch2/catch.hpp>

#include <string>

#include "support.h"

using Catch::Contains;
using sluice::test::CliResult;
using sluice::test::TempDir;

#ifdef SLUICE_CLI

namespace {

// A pipeline of 120 samples whose map misbehaves on sample `bad` in the way
// `misbehave` (Lua code) says.
std::string pipeline(const std::string& misbehave, int bad) {
  return R"(local sluice = require("sluice")
local ffi = require("ffi")
ffi.cdef("int raise(int sig);")
leaked = {}
return sluice.pipeline {
  source = sluice.range(120),
  fields = { { "x", "int64" } },
  batch_size = 8, workers = 2, prefetch = 4,
  map = function(i, ctx)
    if i == )" + std::to_string(bad) + R"( then
      )" + misbehave + R"(
    end
    return { x = i }
  end,
}
)";
}

CliResult run(const std::string& script, std::vector<std::string> extra) {
  std::vector<std::string> args{"run", script, "--quiet"};
  args.insert(args.end(), extra.begin(), extra.end());
  return sluice::test::run_cli(args);
}

}  // namespace

TEST_CASE("a Lua map that hangs on one sample is timed out, retried, then failed or skipped", "[cli][faults]") {
  TempDir dir;
  const std::string script = dir.write("hang.lua", pipeline("while true do end", 42));
  const CliResult failed = run(script, {"--batch-timeout-ms", "300", "--max-retries", "2"});
  INFO(failed.err);
  CHECK(failed.status == 1);
  CHECK_THAT(failed.err, Contains("sample 42") && Contains("timed out after 300 ms"));
  CHECK(sluice::test::wait_for_no_descendants(1000).empty());

  const CliResult skipped = run(script, {"--batch-timeout-ms", "300", "--max-retries", "2", "--on-error", "skip"});
  INFO(skipped.err);
  CHECK(skipped.status == 0);
  CHECK_THAT(skipped.out, Contains("delivered   15 batches, 119 samples"));
  CHECK_THAT(skipped.out, Contains("skipped     1 sample") && Contains("ids 42"));
  CHECK_THAT(skipped.out, Contains("worker restart"));
  CHECK(sluice::test::wait_for_no_descendants(1000).empty());
}

TEST_CASE("a Lua map that crashes its worker on one sample is retried, then failed or skipped", "[cli][faults]") {
  TempDir dir;
  const std::string segv = dir.write("segv.lua", pipeline("ffi.C.raise(11)", 17));
  const CliResult failed = run(segv, {});
  INFO(failed.err);
  CHECK(failed.status == 1);
  CHECK_THAT(failed.err, Contains("sample 17") && Contains("failed 3 times") && Contains("signal 11"));
  CHECK(sluice::test::wait_for_no_descendants(1000).empty());

  const std::string exits = dir.write("exit.lua", pipeline("os.exit(3)", 17));
  const CliResult skipped = run(exits, {"--on-error", "skip"});
  INFO(skipped.err);
  CHECK(skipped.status == 0);
  CHECK_THAT(skipped.out, Contains("119 samples") && Contains("ids 17"));
  CHECK(sluice::test::wait_for_no_descendants(1000).empty());
}

TEST_CASE("a Lua map that leaks memory on one sample is stopped by the worker memory limit", "[cli][faults]") {
  TempDir dir;
  const std::string script = dir.write(
      "leak.lua", pipeline("while true do leaked[#leaked + 1] = string.rep('x', 4000000) .. #leaked end", 9));
  const CliResult skipped = run(script, {"--worker-memory-mb", "300", "--on-error", "skip"});
  INFO(skipped.err);
  CHECK(skipped.status == 0);
  CHECK_THAT(skipped.out, Contains("119 samples") && Contains("ids 9"));
  const CliResult failed = run(script, {"--worker-memory-mb", "300"});
  CHECK(failed.status == 1);
  CHECK_THAT(failed.err, Contains("sample 9") && Contains("worker_memory_mb"));
  CHECK(sluice::test::wait_for_no_descendants(1000).empty());
}

#endif
