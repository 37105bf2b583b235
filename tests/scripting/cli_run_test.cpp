// `sluice run` under signals, with run records, resume and distributed
// launchers: real processes, real signals, real files.
#include <catch2/catch.hpp>

#include "skip.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "support.h"

using Catch::Contains;
using sluice::test::CliResult;
using sluice::test::TempDir;
using namespace std::chrono_literals;

#ifdef SLUICE_CLI

namespace {

// 600 samples of 16 float32 noise values keyed by ctx.rng: content depends on
// (seed, epoch, sample) only.
const char* kPipeline = R"(local sluice = require("sluice")
return sluice.pipeline {
  source = sluice.range(600),
  fields = { { "x", "float32", { 16 } }, { "label", "int64" } },
  batch_size = 10, shuffle = true, seed = 5, epochs = 2, workers = 2, prefetch = 4,
  map = function(i, ctx)
    local x = ctx.out.x
    for k = 0, 15 do x.data[k] = ctx.rng:normal() end
    return { x = x, label = i % 7 }
  end,
}
)";

// A slow endless pipeline, for signals.
const char* kEndless = R"(local sluice = require("sluice")
return sluice.pipeline {
  source = sluice.range(1000000),
  fields = { { "x", "float32", { 1024 } } },
  batch_size = 8, epochs = 0, workers = 2,
  map = function(i, ctx) return { x = ctx.out.x } end,
}
)";

pid_t spawn_cli(const std::vector<std::string>& args, const std::string& cwd) {
  std::fflush(stdout);  // or the child would print the parent's buffered output again
  std::fflush(stderr);
  pid_t pid = fork();
  if (pid == 0) {
    if (chdir(cwd.c_str()) != 0) _exit(127);
    if (!freopen("/dev/null", "w", stdout) || !freopen("/dev/null", "w", stderr)) _exit(127);
    std::vector<char*> argv{const_cast<char*>(SLUICE_CLI)};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(SLUICE_CLI, argv.data());
    _exit(127);
  }
  return pid;
}

int stop_with(int sig, const std::string& script, const std::string& cwd) {
  pid_t pid = spawn_cli({"run", script, "--quiet"}, cwd);
  std::this_thread::sleep_for(1500ms);  // loaded, workers forked, batches flowing
  REQUIRE(kill(pid, sig) == 0);
  const auto sent = std::chrono::steady_clock::now();
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  CHECK(std::chrono::steady_clock::now() - sent < 1s);
  REQUIRE(WIFEXITED(status));
  return WEXITSTATUS(status);
}

std::vector<std::string> lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// A record made of a first part's header and batches, then a second part's batches.
void join_records(const std::string& first, const std::string& second, const std::string& out) {
  std::ofstream o(out);
  for (const auto& l : lines(first)) o << l << "\n";
  auto rest = lines(second);
  for (std::size_t i = 1; i < rest.size(); ++i) o << rest[i] << "\n";
}

// Sample ids per line of a record (header skipped), parsed from "samples":[...].
std::vector<std::vector<std::uint64_t>> record_samples(const std::string& path) {
  std::vector<std::vector<std::uint64_t>> out;
  auto all = lines(path);
  for (std::size_t i = 1; i < all.size(); ++i) {
    const std::string& l = all[i];
    auto start = l.find("\"samples\":[") + 11;
    auto end = l.find(']', start);
    std::vector<std::uint64_t> ids;
    std::stringstream ss(l.substr(start, end - start));
    for (std::string id; std::getline(ss, id, ',');) ids.push_back(std::stoull(id));
    out.push_back(ids);
  }
  return out;
}

}  // namespace

TEST_CASE("Ctrl-C and SIGTERM stop sluice run at once with 130 and 143, saving the state", "[cli][signals]") {
  TempDir dir;
  const std::string script = dir.write("endless.lua", kEndless);
  CHECK(stop_with(SIGINT, script, dir.path()) == 130);
  CHECK(sluice::test::wait_for_no_descendants(1000).empty());
  const auto state = lines(dir.path() + "/sluice-state.json");
  REQUIRE(state.size() == 1);
  CHECK_THAT(state[0], Contains("\"sluice_state\":1"));
  CHECK(stop_with(SIGTERM, script, dir.path()) == 143);
  CHECK(sluice::test::wait_for_no_descendants(1000).empty());
}

TEST_CASE("a run stopped and resumed with another worker count sees what one whole run sees", "[cli][resume]") {
  TempDir dir;
  const std::string script = dir.write("p.lua", kPipeline);
  const std::string full = dir.path() + "/full.jsonl", a = dir.path() + "/a.jsonl", b = dir.path() + "/b.jsonl";
  const std::string state = dir.path() + "/state.json", joined = dir.path() + "/joined.jsonl";
  REQUIRE(sluice::test::run_cli({"run", script, "--quiet", "--record", full}).status == 0);
  CliResult first = sluice::test::run_cli({"run", script, "--quiet", "--batches", "77", "--record", a, "--state", state});
  INFO(first.err);
  REQUIRE(first.status == 0);
  CliResult second = sluice::test::run_cli(
      {"run", script, "--quiet", "--resume", state, "--workers", "3", "--prefetch", "9", "--record", b});
  INFO(second.err);
  REQUIRE(second.status == 0);
  join_records(a, b, joined);
  CliResult same = sluice::test::run_cli({"verify", full, joined});
  INFO(same.out);
  CHECK(same.status == 0);
  CHECK_THAT(same.out, Contains("identical: 120 batches"));

  // Another seed is caught, and named.
  CliResult other = sluice::test::run_cli({"run", script, "--quiet", "--seed", "6", "--record", b});
  REQUIRE(other.status == 0);
  CliResult differ = sluice::test::run_cli({"verify", full, b});
  CHECK(differ.status == 1);
  CHECK_THAT(differ.out, Contains("epoch 0, batch 0") && Contains("samples differ"));
}

TEST_CASE("mpirun -np 3: ranks see disjoint shards with equal batch counts, and resume per rank", "[cli][mpi]") {
  if (std::system("command -v mpirun > /dev/null 2>&1") != 0) {
    SKIP_TEST("mpirun not found (Debian package openmpi-bin): the distributed test needs it");
  }
  TempDir dir;
  const std::string script = dir.write("p.lua", kPipeline);
  const std::string mpirun = "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 "
                             "mpirun --oversubscribe -np 3 " SLUICE_CLI " run " + script + " --quiet ";
  auto sh = [&](const std::string& args) {
    const std::string cmd = "cd " + dir.path() + " && " + mpirun + args + " > mpi.log 2>&1";
    int rc = std::system(cmd.c_str());
    std::ifstream log(dir.path() + "/mpi.log");
    INFO(std::string(std::istreambuf_iterator<char>(log), std::istreambuf_iterator<char>()));
    REQUIRE(rc == 0);
  };
  sh("--record full_{rank}.jsonl");
  std::map<std::uint64_t, int> seen;  // sample id -> times, in epoch 0
  std::size_t batches0 = 0;
  for (int r = 0; r < 3; ++r) {
    auto samples = record_samples(dir.path() + "/full_" + std::to_string(r) + ".jsonl");
    if (r == 0) batches0 = samples.size();
    CHECK(samples.size() == batches0);  // the same batch count on every rank
    for (std::size_t b = 0; b < samples.size() / 2; ++b) {  // epoch 0 (2 epochs per run)
      for (auto id : samples[b]) ++seen[id];
    }
  }
  CHECK(batches0 == 40);  // 600 / 3 = 200 samples per rank, batches of 10, 2 epochs
  CHECK(seen.size() == 600);  // the union is the dataset
  for (const auto& [id, times] : seen) REQUIRE(times == 1);  // no overlap

  sh("--batches 13 --record a_{rank}.jsonl --state state_{rank}.json");
  sh("--resume state_{rank}.json --workers 1 --record b_{rank}.jsonl");
  for (int r = 0; r < 3; ++r) {
    const std::string rank = std::to_string(r);
    join_records(dir.path() + "/a_" + rank + ".jsonl", dir.path() + "/b_" + rank + ".jsonl",
                 dir.path() + "/joined_" + rank + ".jsonl");
    CliResult v = sluice::test::run_cli(
        {"verify", dir.path() + "/full_" + rank + ".jsonl", dir.path() + "/joined_" + rank + ".jsonl"});
    INFO(v.out);
    CHECK(v.status == 0);
  }
}

#endif
