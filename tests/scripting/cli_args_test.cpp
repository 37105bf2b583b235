// `sluice run`'s command line: every setting that shapes the data overrides
// the script, typos get a suggestion, short options, and the messages a user
// needs when the environment or a map goes wrong.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdlib>
#include <string>

#include "sluice/error.h"
#include "sluice/script.h"
#include "skip.h"
#include "support.h"

using Catch::Contains;
using sluice::test::CliResult;
using sluice::test::TempDir;

namespace {

// 10 samples, batches of 4, shuffled and keeping the short last batch.
const char* kTen = R"(local sluice = require("sluice")
return sluice.pipeline {
  source = sluice.range(10),
  fields = { { "x", "int64" } },
  batch_size = 4, shuffle = true, drop_last = false, seed = 3, workers = 1,
  map = function(i, ctx) return { x = i } end,
}
)";

std::string header_of(const std::string& record) {
  const auto lines = sluice::test::read_lines(record);
  return lines.empty() ? "" : lines[0];
}

}  // namespace

#ifdef SLUICE_CLI

TEST_CASE("sluice run: --shuffle, --drop-last, --batch-size and --shard-policy override the script", "[cli][args]") {
  TempDir dir;
  const std::string script = dir.write("ten.lua", kTen);
  const std::string record = dir.path() + "/r.jsonl";
  CliResult r = sluice::test::run_cli({"run", script, "--quiet", "--no-shuffle", "--drop-last", "--record", record});
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.out, Contains("delivered   2 batches, 8 samples"));
  CHECK_THAT(header_of(record), Contains("\"shuffle\":false") && Contains("\"drop_last\":true"));

  r = sluice::test::run_cli({"run", script, "--quiet", "--shuffle", "--no-drop-last", "-b", "5", "--record", record});
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.out, Contains("delivered   2 batches, 10 samples") && Contains("batch 5"));
  CHECK_THAT(header_of(record), Contains("\"shuffle\":true") && Contains("\"batch_size\":5"));

  // 10 samples over 3 ranks: pad gives every rank 4, drop gives 3.
  r = sluice::test::run_cli({"run", script, "--quiet", "--rank", "0", "--world-size", "3", "--shard-policy", "pad"});
  CHECK_THAT(r.out, Contains("delivered   1 batches, 4 samples"));
  r = sluice::test::run_cli({"run", script, "--quiet", "--rank", "0", "--world-size", "3", "--shard-policy=drop"});
  CHECK_THAT(r.out, Contains("delivered   1 batches, 3 samples"));
  r = sluice::test::run_cli({"run", script, "--shard-policy", "even"});
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Contains("pad or drop"));
}

TEST_CASE("sluice run: short options, and a suggestion for a misspelt one", "[cli][args]") {
  TempDir dir;
  const std::string script = dir.write("ten.lua", kTen);
  CliResult r = sluice::test::run_cli({"run", script, "--quiet", "-w", "3", "-e", "2", "-p5"});
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.out, Contains("3 workers, prefetch 5") && Contains("delivered   6 batches"));

  r = sluice::test::run_cli({"run", script, "--worker", "2"});
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Contains("unknown option --worker; did you mean --workers?"));
  r = sluice::test::run_cli({"run", script, "--suffle"});
  CHECK_THAT(r.err, Contains("did you mean --shuffle?"));
  r = sluice::test::run_cli({"run", script, "--frobnicate", "1"});
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Contains("unknown option --frobnicate") && !Contains("did you mean"));
  r = sluice::test::run_cli({"run", script, "-x", "1"});
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Contains("unknown option -x; the short options are -w (--workers)"));
}

TEST_CASE("sluice run warns of RANK without WORLD_SIZE", "[cli][args]") {
  TempDir dir;
  const std::string script = dir.write("ten.lua", kTen);
  ::setenv("RANK", "1", 1);
  const CliResult r = sluice::test::run_cli({"run", script, "--quiet"});
  ::unsetenv("RANK");
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.err, Contains("RANK is set but WORLD_SIZE is not"));
  CHECK_THAT(r.out, Contains("delivered   3 batches, 10 samples"));  // unsharded, and said so
}

TEST_CASE("sluice run --trace writes a Chrome trace with a fill per batch", "[cli][trace]") {
  if (::access("/usr/bin/python3", X_OK) != 0) SKIP_TEST("no /usr/bin/python3 to parse the trace with");
  TempDir dir;
  const std::string script = dir.write("ten.lua", kTen);
  const std::string trace = dir.path() + "/t.json";
  const CliResult r = sluice::test::run_cli({"run", script, "--quiet", "-w", "2", "-e", "3", "--trace", trace});
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.err, Contains("trace written to " + trace));
  // Prints: fills, distinct worker tracks with fills, named tracks, counters.
  const std::string check = dir.write("check.py", R"(import json, sys
d = json.load(open(sys.argv[1]))
ev = d["traceEvents"]
fills = [e for e in ev if e["ph"] == "X" and e["name"] == "fill"]
names = sorted(e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name")
counters = [e for e in ev if e["ph"] == "C"]
print(len(fills), len(set(e["tid"] for e in fills)) <= 2, ",".join(names), len(counters) > 0)
)");
  const std::string out = dir.path() + "/check.txt";
  REQUIRE(std::system(("/usr/bin/python3 " + check + " " + trace + " > " + out).c_str()) == 0);
  const auto lines = sluice::test::read_lines(out);
  REQUIRE(lines.size() == 1);
  CHECK(lines[0] == "9 True consumer (next),worker 0,worker 1 True");
}

#endif  // SLUICE_CLI

TEST_CASE("image options with an unknown key are an error naming it and the valid ones", "[args]") {
  TempDir dir;
  const std::string path = dir.write("p.lua", R"(local sluice = require("sluice")
local image = require("sluice.image")
return sluice.pipeline {
  source = sluice.range(4),
  fields = { { "x", "float32", { 2, 2, 3 } } },
  map = function(i, ctx)
    local src = ctx:tensor("uint8", { 2, 2, 3 })
    image.normalize(src, ctx.out.x, { mean = { 0, 0, 0 }, flipp = true })
    return { x = ctx.out.x }
  end,
}
)");
  REQUIRE_THROWS_WITH(sluice::load_script({.path = path}),
                      Contains("sluice.image.normalize: unknown option 'flipp'; the options are mean, std, scale, "
                               "flip, layout") &&
                          Contains("p.lua:8"));
}

TEST_CASE("a failing map names the sample's file", "[args]") {
  TempDir dir;
  dir.write("data/a.txt", "hello");
  const std::string path = dir.write("p.lua", R"(local sluice = require("sluice")
return sluice.pipeline {
  source = sluice.files { "data/*.txt" },
  fields = { { "x", "int64" } },
  map = function(s, ctx)
    error("cannot parse")
  end,
}
)");
  REQUIRE_THROWS_WITH(sluice::load_script({.path = path}),
                      Contains("failed on sample 0 (epoch 0, file ") && Contains("data/a.txt)") &&
                          Contains("cannot parse"));
}
