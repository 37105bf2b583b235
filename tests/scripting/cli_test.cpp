// `sluice run` as a user runs it: exit status, what it prints, and no process
// left behind, whether the pipeline succeeds or fails.
#include <catch2/catch.hpp>

#include "support.h"

using Catch::Contains;
using sluice::test::CliResult;
using sluice::test::TempDir;

#ifdef SLUICE_CLI

TEST_CASE("sluice run runs the quickstart and summarizes it", "[cli]") {
  const CliResult r = sluice::test::run_cli(
      {"run", SLUICE_EXAMPLES_DIR "/quickstart.lua", "--batches", "40", "--interval", "0.01", "--workers", "2"});
  INFO(r.err);
  CHECK(r.status == 0);
  CHECK_THAT(r.out, Contains("delivered   40 batches, 2560 samples"));
  CHECK_THAT(r.out, Contains("throughput"));
  CHECK_THAT(r.out, Contains("workers") && Contains("busy making batches"));
  CHECK_THAT(r.out, Contains("consumer    waited"));
  CHECK_THAT(r.out, Contains("verdict     "));
  CHECK_THAT(r.err, Contains("samples/s"));  // plain progress lines: stderr is not a terminal
  CHECK_THAT(r.err, !Contains("\r"));
  CHECK(sluice::test::wait_for_no_descendants(2000).empty());
}

TEST_CASE("sluice run --help documents every option", "[cli]") {
  const CliResult r = sluice::test::run_cli({"run", "--help"});
  CHECK(r.status == 0);
  for (const char* option : {"--epochs", "--workers", "--prefetch", "--seed", "--batches", "--interval", "--quiet"}) {
    CHECK_THAT(r.out, Contains(option));
  }
}

TEST_CASE("sluice run rejects bad usage with status 2", "[cli]") {
  CHECK(sluice::test::run_cli({"run"}).status == 2);
  CHECK(sluice::test::run_cli({"run", "x.lua", "--workers", "0"}).status == 2);
  CHECK(sluice::test::run_cli({"run", "x.lua", "--seed", "-1"}).status == 2);
  const CliResult r = sluice::test::run_cli({"run", "x.lua", "--frobnicate", "1"});
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Contains("unknown option --frobnicate"));
}

TEST_CASE("a failing pipeline exits 1 with its message and leaves no process", "[cli]") {
  TempDir dir;
  const std::string map_error = dir.write("map_error.lua", R"(local sluice = require("sluice")
return sluice.pipeline {
  source = sluice.range(400),
  fields = { { "x", "float32", { 64 } } },
  batch_size = 8, workers = 2, prefetch = 4,
  map = function(i, ctx)
    if i == 333 then error("bad record " .. i) end
    return { x = ctx.out.x }
  end,
}
)");
  const CliResult failed = sluice::test::run_cli({"run", map_error, "--quiet"});
  CHECK(failed.status == 1);
  CHECK_THAT(failed.err, Contains("sluice run: error: "));
  CHECK_THAT(failed.err, Contains("failed on sample 333"));
  CHECK_THAT(failed.err, Contains("map_error.lua:7: bad record 333"));
  CHECK(sluice::test::wait_for_no_descendants(2000).empty());

  const std::string syntax = dir.write("syntax.lua", "return {\n");
  const CliResult bad = sluice::test::run_cli({"run", syntax});
  CHECK(bad.status == 1);
  CHECK_THAT(bad.err, Contains("syntax error") && Contains("syntax.lua:2:"));
  CHECK(sluice::test::wait_for_no_descendants(2000).empty());
}

#endif
