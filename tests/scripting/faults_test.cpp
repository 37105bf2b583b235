// A Lua map that hangs, crashes its worker, or leaks memory on one sample:
// each ends as --on-error says, through `sluice run`, with no process left.
// On sample 0, in the load's trial, it ends a child, never the host.
#include <catch2/catch.hpp>

#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "sluice/error.h"
#include "sluice/loader.h"
#include "sluice/script.h"
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

TEST_CASE("a Lua map that crashes, exits or hangs on sample 0 ends the load's trial child, never the host",
          "[faults]") {
  TempDir dir;
  // Only the hang is timed (a short timeout would also cut a slow crash under a sanitizer).
  const struct {
    const char* name;
    const char* misbehave;
    const char* ended;
    std::uint32_t timeout_ms;
  } cases[] = {{"segv", "print('about to write through NULL') ffi.cast('int*', 0)[0] = 1",
                "was killed by signal 11 (Segmentation fault); its last output:\nabout to write through NULL", 600'000},
               {"exit", "os.exit(3)", "exited with status 3", 600'000},
               {"hang", "while true do end", "ran past 300 ms (batch_timeout_ms) and was killed", 300}};
  for (const auto& c : cases) {
    INFO(c.name);
    const std::string script = dir.write(std::string(c.name) + ".lua", pipeline(c.misbehave, 0));
    // In this process, as a trainer calls it: the error, and this process goes on.
    try {
      sluice::load_script({.path = script, .batch_timeout_ms = c.timeout_ms});
      FAIL("the load passed");
    } catch (const sluice::Error& e) {
      CHECK_THAT(e.what(), Contains(script + ": the trial run of sample 0") && Contains(c.ended));
    }
    CHECK(sluice::test::wait_for_no_descendants(1000).empty());
    // Under skip, the trial goes on to sample 1 and the workers skip sample 0.
    sluice::Script s = sluice::load_script({.path = script, .on_error = sluice::OnError::skip,
                                            .batch_timeout_ms = c.timeout_ms});
    bool noted = false;
    for (const std::string& note : s.notes) noted = noted || note.find("sample 0 failed in the trial run") != std::string::npos;
    CHECK(noted);
    s.options.max_retries = 1;
    std::uint64_t samples = 0;
    {
      sluice::Loader loader(s.options);
      while (auto b = loader.next()) samples += b->size();
      CHECK(loader.stats().skipped_samples == std::vector<std::uint64_t>{0});
    }
    CHECK(samples == 119);
    CHECK(sluice::test::wait_for_no_descendants(2000).empty());
  }
}

TEST_CASE("a map that crashes on a streamed source's first record: the trial takes the next record, not it again",
          "[faults]") {
  TempDir dir;
  // A gzip'd tar is streamed: each take() reads the record after the last.
  std::string names;
  for (int i = 0; i < 20; ++i) {
    char key[8];
    std::snprintf(key, sizeof key, "%02d", i);
    dir.write(std::string(key) + ".txt", "record " + std::string(key));
    names += std::string(" ") + key + ".txt";
  }
  REQUIRE(std::system(("tar -czf '" + dir.path() + "/s.tar.gz' -C '" + dir.path() + "'" + names).c_str()) == 0);
  const std::string script = dir.write("stream.lua", R"(local sluice = require("sluice")
local ffi = require("ffi")
return sluice.pipeline {
  source = sluice.tar { 's.tar.gz' },
  fields = { { "n", "int32" } },
  batch_size = 4, workers = 1, on_error = "skip",
  map = function(s)
    if s.key == "00" then ffi.cast("int*", 0)[0] = 1 end
    return { n = tonumber(s.key) }
  end,
}
)");
  const sluice::Script s = sluice::load_script({.path = script});
  bool noted = false;
  for (const std::string& note : s.notes) noted = noted || note.find("sample 0 failed in the trial run") != std::string::npos;
  CHECK(noted);
  CHECK(sluice::test::wait_for_no_descendants(1000).empty());
}

TEST_CASE("a worker that replaces a crashed one runs the script the run began with, not the file as it is now", "[faults]") {
  TempDir dir;
  const std::string body = R"(local sluice = require("sluice")
return sluice.pipeline {
  source = sluice.range(64), fields = { { "x", "int64" } },
  batch_size = 4, workers = 2, prefetch = 4,
  map = function(i, ctx) return { x = i * 2 } end,
}
)";
  const std::string path = dir.write("p.lua", body);
  sluice::Script script = sluice::load_script({.path = path});
  sluice::Loader loader(script.options);
  std::vector<std::int64_t> got;
  auto take = [&](const sluice::Batch& batch) {
    const auto* x = static_cast<const std::int64_t*>(batch.field("x").data);
    for (std::size_t i = 0; i < batch.size(); ++i) got.push_back(x[i]);
  };
  take(*loader.next());
  // Edited mid-run (another map), then every worker killed: their
  // replacements read nothing from the file. Removed, the same.
  std::string edited = body;
  edited.replace(edited.find("i * 2"), 5, "i * 3");
  dir.write("p.lua", edited);
  for (const int pid : loader.worker_pids()) ::kill(pid, SIGKILL);
  for (int b = 0; b < 4; ++b) take(*loader.next());
  std::remove(path.c_str());
  for (const int pid : loader.worker_pids()) ::kill(pid, SIGKILL);
  while (auto batch = loader.next()) take(*batch);
  REQUIRE(got.size() == 64);
  for (std::size_t i = 0; i < got.size(); ++i) CHECK(got[i] == static_cast<std::int64_t>(i) * 2);
  CHECK(loader.stats().worker_restarts >= 2);
}

#endif
