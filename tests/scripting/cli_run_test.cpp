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
#include <filesystem>
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
  map = function(i, ctx)
    if ctx.batch == 20 and ctx.position == 0 and ctx.epoch == 0 then
      io.open("flowing.flag", "w"):close()  -- in the run's directory: batches are flowing
    end
    return { x = ctx.out.x }
  end,
}
)";

// With own_group, the child leads a process group of its own (as under Slurm
// or systemd), so that the test can signal the whole group: kill(-pid, sig).
pid_t spawn_cli(const std::vector<std::string>& args, const std::string& cwd, bool own_group = false) {
  std::fflush(stdout);  // or the child would print the parent's buffered output again
  std::fflush(stderr);
  pid_t pid = fork();
  if (pid == 0) {
    if (own_group && setpgid(0, 0) != 0) _exit(127);
    if (chdir(cwd.c_str()) != 0) _exit(127);
    if (!freopen("/dev/null", "w", stdout) || !freopen("/dev/null", "w", stderr)) _exit(127);
    std::vector<char*> argv{const_cast<char*>(SLUICE_CLI)};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(SLUICE_CLI, argv.data());
    _exit(127);
  }
  if (own_group) setpgid(pid, pid);  // also here: the group exists before the parent signals it
  return pid;
}

// Waits for `path` to exist (the other side of a handshake), at most 60 s.
bool wait_for_file(const std::string& path) {
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (!std::filesystem::exists(path)) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(5ms);  // polling the file, not a guess at timing
  }
  return true;
}

int stop_with(int sig, const std::string& script, const std::string& cwd) {
  const std::string flag = cwd + "/flowing.flag";
  std::filesystem::remove(flag);
  pid_t pid = spawn_cli({"run", script, "--quiet"}, cwd);
  REQUIRE(wait_for_file(flag));  // loaded, workers forked, batches flowing
  REQUIRE(kill(pid, sig) == 0);
  const auto sent = std::chrono::steady_clock::now();
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  CHECK(std::chrono::steady_clock::now() - sent < 1s);
  REQUIRE(WIFEXITED(status));
  return WEXITSTATUS(status);
}

using sluice::test::read_lines;
using sluice::test::record_samples;

// A record made of a first part's header and batches, then a second part's batches.
void join_records(const std::string& first, const std::string& second, const std::string& out) {
  std::ofstream o(out);
  for (const auto& l : read_lines(first)) o << l << "\n";
  auto rest = read_lines(second);
  for (std::size_t i = 1; i < rest.size(); ++i) o << rest[i] << "\n";
}

}  // namespace

TEST_CASE("Ctrl-C and SIGTERM stop sluice run at once with 130 and 143, saving the state", "[cli][signals]") {
  TempDir dir;
  const std::string script = dir.write("endless.lua", kEndless);
  CHECK(stop_with(SIGINT, script, dir.path()) == 130);
  CHECK(sluice::test::wait_for_no_descendants(1000).empty());
  const auto state = read_lines(dir.path() + "/sluice-state.json");
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

TEST_CASE("a record that cannot be written stops the run with a state before the unrecorded batch", "[cli][resume]") {
  if (::access("/dev/full", W_OK) != 0) SKIP_TEST("/dev/full is not writable here (it makes every write fail with ENOSPC)");
  TempDir dir;
  const std::string script = dir.write("p.lua", kPipeline);
  const std::string state = dir.path() + "/state.json";
  // Every write to /dev/full fails as a full disk does: the first batch's line is the first written.
  CliResult full_disk = sluice::test::run_cli({"run", script, "--quiet", "--record", "/dev/full", "--state", state});
  INFO(full_disk.err);
  CHECK(full_disk.status == 1);
  CHECK_THAT(full_disk.err, Contains("/dev/full: write failed: No space left on device") &&
                                Contains("state saved to " + state));
  std::ifstream in(state);
  const std::string json{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  CHECK_THAT(json, Contains("\"epoch\":0") && Contains("\"batch\":0"));  // batch 0 is not taken as delivered
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

TEST_CASE("elastic: stopped on 3 ranks, resumed on 2 (and 2 on 4), the same global steps as 1 rank", "[cli][mpi]") {
  if (std::system("command -v mpirun > /dev/null 2>&1") != 0) {
    SKIP_TEST("mpirun not found (Debian package openmpi-bin): the distributed test needs it");
  }
  TempDir dir;
  const std::string script = dir.write("p.lua", kPipeline);
  // 600 samples, global batch 60: 10 global steps per epoch, 2 epochs, on
  // any world size that divides 60.
  const std::string common = " run " + script + " --quiet --global-batch-size 60 ";
  auto sh = [&](const std::string& cmd) {
    const int rc = std::system(("cd " + dir.path() + " && " + cmd + " > log 2>&1").c_str());
    std::ifstream log(dir.path() + "/log");
    const std::string text{std::istreambuf_iterator<char>(log), std::istreambuf_iterator<char>()};
    INFO(cmd << "\n" << text);
    REQUIRE(rc == 0);
    return text;
  };
  auto mpirun = [](int np) {
    return "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 "
           "mpirun --oversubscribe -np " + std::to_string(np) + " ";
  };
  sh(SLUICE_CLI + common + "--record full.jsonl");

  for (const auto& [from, to] : {std::pair{3, 2}, std::pair{2, 4}}) {
    const std::string run = std::to_string(from) + "to" + std::to_string(to);
    std::filesystem::create_directories(dir.path() + "/" + run + "/records");
    std::filesystem::create_directories(dir.path() + "/" + run + "/states");
    // Rank r stops after 4 + r batches: the ranks stop at different steps.
    sh(mpirun(from) + "sh -c 'exec " SLUICE_CLI + common + "--batches $((4 + OMPI_COMM_WORLD_RANK)) --record " + run +
       "/records/a_{rank}.jsonl --state " + run + "/states/state_{rank}.json'");
    const std::string note = sh(mpirun(to) + SLUICE_CLI + common + "--resume '" + run + "/states/state_*.json' --record " +
                                run + "/records/b_{rank}.jsonl");
    // The slowest rank (0) stopped after step 3: the others' later steps come again.
    const int again = (from - 1) * from / 2;
    CHECK_THAT(note, Contains("the run resumes at epoch 0, batch 4") &&
                         Contains(std::to_string(again) + " per-rank batch"));

    CliResult v = sluice::test::run_cli({"verify", "--global", dir.path() + "/full.jsonl", dir.path() + "/" + run + "/records"});
    INFO(run << ": " << v.out << v.err);
    CHECK(v.status == 0);
    CHECK_THAT(v.out, Contains("identical: 20 global steps, same samples and per-sample digests") &&
                          Contains("delivered " + std::to_string(again) + " per-rank batches again after a resume"));
  }

  // A glob that misses a rank is refused, naming what is wrong.
  std::filesystem::remove(dir.path() + "/3to2/states/state_1.json");
  const int rc = std::system(("cd " + dir.path() + " && " + mpirun(2) + SLUICE_CLI + common +
                              "--resume '3to2/states/state_*.json' > log 2>&1").c_str());
  std::ifstream log(dir.path() + "/log");
  const std::string text{std::istreambuf_iterator<char>(log), std::istreambuf_iterator<char>()};
  INFO(text);
  CHECK(rc != 0);
  CHECK_THAT(text, Contains("--resume 3to2/states/state_*.json (2 states)"));
}

namespace {

// Where a run stands, told through files (a handshake, no sleeps): the
// launching process writes loading.flag at load and then waits for go.flag
// (the workers find it there); a worker writes flowing.flag when it fills
// batch 20 of epoch 0.
const char* kHandshake = R"(local sluice = require("sluice")
local dir = sluice.script_dir
local function exists(name)
  local f = io.open(dir .. "/" .. name)
  if f then f:close() end
  return f ~= nil
end
io.open(dir .. "/loading.flag", "w"):close()
local deadline = os.time() + 30
while not exists("go.flag") and os.time() < deadline do end
return sluice.pipeline {
  source = sluice.range(1000000),
  fields = { { "x", "float32", { 1024 } } },
  batch_size = 8, epochs = 1, workers = 2,
  map = function(i, ctx)
    if ctx.batch == 20 and ctx.position == 0 and ctx.epoch == 0 then
      io.open(dir .. "/flowing.flag", "w"):close()
    end
    return { x = ctx.out.x }
  end,
}
)";


}  // namespace

TEST_CASE("Ctrl-C while the trial of sample 0 loops forever: exit 130 within the 2 s grace", "[cli][signals]") {
  TempDir dir;
  const std::string script = dir.write("spin.lua", R"(local sluice = require("sluice")
local dir = sluice.script_dir
return sluice.pipeline {
  source = sluice.range(100),
  fields = { { "x", "float32", { 4 } } },
  map = function(i, ctx)
    if i == 0 then
      io.open(dir .. "/spinning.flag", "w"):close()
      while true do end  -- compiled by LuaJIT: no hook runs in it
    end
    return { x = ctx.out.x }
  end,
}
)");
  for (int sig : {SIGINT, SIGTERM}) {
    std::filesystem::remove(dir.path() + "/spinning.flag");
    const pid_t pid = spawn_cli({"run", script, "--quiet", "--state", dir.path() + "/state.json"}, dir.path());
    REQUIRE(wait_for_file(dir.path() + "/spinning.flag"));  // in the load's trial of sample 0 (its child)
    const auto sent = std::chrono::steady_clock::now();
    REQUIRE(kill(pid, sig) == 0);
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 128 + sig);
    CHECK(std::chrono::steady_clock::now() - sent < 5s);
    CHECK(!std::filesystem::exists(dir.path() + "/state.json"));  // nothing was started, nothing saved
  }
  CHECK(sluice::test::wait_for_no_descendants(2000).empty());
}

TEST_CASE("SIGTERM to the whole process group, during start-up and mid-run: 143, state saved, resumable",
          "[cli][signals]") {
  TempDir dir;
  const std::string script = dir.write("p.lua", kHandshake);
  const std::string state = dir.path() + "/state.json", record = dir.path() + "/run.jsonl";
  auto touch = [&](const std::string& name) { std::ofstream(dir.path() + "/" + name).put('\n'); };
  auto finish = [](pid_t pid) {
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    REQUIRE(WIFEXITED(status));
    return WEXITSTATUS(status);
  };

  SECTION("during start-up: the state is the start position, the record is valid and empty") {
    const pid_t pid = spawn_cli({"run", script, "--quiet", "--state", state, "--record", record}, dir.path(), true);
    REQUIRE(wait_for_file(dir.path() + "/loading.flag"));  // inside load_script, before any Loader
    REQUIRE(kill(-pid, SIGTERM) == 0);
    touch("go.flag");
    CHECK(finish(pid) == 143);
    const auto saved = read_lines(state);
    REQUIRE(saved.size() == 1);
    CHECK_THAT(saved[0], Contains("\"epoch\":0") && Contains("\"batch\":0,"));
    const auto lines = read_lines(record);
    REQUIRE(lines.size() == 1);
    CHECK_THAT(lines[0], Contains("\"sluice_record\":1"));
  }
  SECTION("mid-run: the workers and the zygote get SIGTERM too, and ignore it") {
    touch("go.flag");
    const pid_t pid = spawn_cli({"run", script, "--quiet", "--state", state, "--record", record}, dir.path(), true);
    REQUIRE(wait_for_file(dir.path() + "/flowing.flag"));
    REQUIRE(kill(-pid, SIGTERM) == 0);
    const auto sent = std::chrono::steady_clock::now();
    CHECK(finish(pid) == 143);
    CHECK(std::chrono::steady_clock::now() - sent < 1s);
    const auto saved = read_lines(state);
    REQUIRE(saved.size() == 1);
    CHECK_THAT(saved[0], !Contains("\"batch\":0,"));
    CHECK(record_samples(record).size() > 0);
  }
  CHECK(sluice::test::wait_for_no_descendants(2000).empty());
  // Either way the run resumes from the saved state.
  CliResult resumed = sluice::test::run_cli({"run", script, "--quiet", "--resume", state, "--batches", "3",
                                             "--state", dir.path() + "/after.json"});
  INFO(resumed.err);
  CHECK(resumed.status == 0);
  CHECK_THAT(resumed.out, Contains("delivered   3 batches"));
}

TEST_CASE("with more than one rank the default state file is per rank", "[cli][resume]") {
  TempDir dir;
  const std::string script = dir.write("p.lua", kPipeline);
  auto run_in_dir = [&](const std::string& env, const std::string& args) {
    const std::string cmd = "cd " + dir.path() + " && " + env + " " SLUICE_CLI " run p.lua --quiet --batches 2 " +
                            args + " > /dev/null 2>&1";
    return std::system(cmd.c_str());
  };
  const std::string single = dir.path() + "/sluice-state.json";
  REQUIRE(run_in_dir("", "") == 0);
  CHECK(std::filesystem::exists(single));
  std::filesystem::remove(single);
  REQUIRE(run_in_dir("", "--rank 1 --world-size 2") == 0);
  CHECK(std::filesystem::exists(dir.path() + "/sluice-state.rank1.json"));
  REQUIRE(run_in_dir("env RANK=0 WORLD_SIZE=2 LOCAL_RANK=0", "") == 0);  // torchrun's variables
  CHECK(std::filesystem::exists(dir.path() + "/sluice-state.rank0.json"));
  CHECK_FALSE(std::filesystem::exists(single));
  // The two ranks' states differ: they never overwrote one another.
  CHECK(read_lines(dir.path() + "/sluice-state.rank0.json") != read_lines(dir.path() + "/sluice-state.rank1.json"));
  // An explicit --state still wins.
  REQUIRE(run_in_dir("", "--rank 1 --world-size 2 --state mine.json") == 0);
  CHECK(std::filesystem::exists(dir.path() + "/mine.json"));
}

TEST_CASE("a fresh run's state file holds its start until it saves: a rank killed -9 never leaves an earlier run's", "[cli][resume]") {
  TempDir dir;
  std::string slow = kPipeline;  // 2 ms a sample: run B is still going when it is killed
  slow.replace(slow.find("    local x = ctx.out.x"), 0, "    local t = os.clock() + 0.002\n    while os.clock() < t do end\n");
  dir.write("p.lua", slow);
  const std::string state = dir.path() + "/sluice-state.rank1.json";
  auto sh = [&](const std::string& command) { return std::system(("cd " + dir.path() + " && " + command).c_str()); };
  // Run A, stopped after 7 batches: its state says so.
  REQUIRE(sh(SLUICE_CLI " run p.lua --quiet --rank 1 --world-size 2 --batches 7 > a.log 2>&1") == 0);
  const auto a = read_lines(state);
  REQUIRE(a.size() == 1);
  CHECK_THAT(a[0], Contains("\"batch\":7"));
  // Run B, fresh, killed -9 once it delivers (before it could save): its
  // file holds B's start, and A's is kept beside it.
  REQUIRE(sh("(" SLUICE_CLI " run p.lua --rank 1 --world-size 2 --record b.jsonl > b.log 2>&1 & p=$!; "
             "while [ ! -s b.jsonl ]; do sleep 0.01; done; kill -9 $p; wait $p; true)") == 0);
  const auto b = read_lines(state);
  REQUIRE(b.size() == 1);
  CHECK_THAT(b[0], Contains("\"batch\":0") && Contains("\"epoch\":0"));
  CHECK(read_lines(state + ".previous") == a);
  std::string log;
  for (const std::string& line : read_lines(dir.path() + "/b.log")) log += line + "\n";
  CHECK_THAT(log, Contains("sluice-state.rank1.json held an earlier run's state, kept as sluice-state.rank1.json.previous"));
  // A fresh run that ends whole leaves no state to resume.
  REQUIRE(sh(SLUICE_CLI " run p.lua --quiet --rank 1 --world-size 2 > c.log 2>&1") == 0);
  CHECK_FALSE(std::filesystem::exists(state));
  CHECK(sluice::test::wait_for_no_descendants(2000).empty());
}

TEST_CASE("a resumed run that ends whole removes the state it resumed from, not another run's", "[cli][resume]") {
  TempDir dir;
  dir.write("p.lua", kPipeline);
  auto sh = [&](const std::string& command) { return std::system(("cd " + dir.path() + " && " + command).c_str()); };
  const std::string state = dir.path() + "/sluice-state.json";
  REQUIRE(sh(SLUICE_CLI " run p.lua --quiet --batches 3 > a.log 2>&1") == 0);
  REQUIRE(std::filesystem::exists(state));
  // Resumed, stopped again: the state moves on. Resumed to the end: gone,
  // so that a job script that resumes whenever the file is there does not
  // make the run's end a second time.
  REQUIRE(sh(SLUICE_CLI " run p.lua --quiet --batches 2 --resume sluice-state.json > b.log 2>&1") == 0);
  CHECK_THAT(read_lines(state).at(0), Contains("\"batch\":5"));
  REQUIRE(sh(SLUICE_CLI " run p.lua --quiet --resume sluice-state.json > c.log 2>&1") == 0);
  CHECK_FALSE(std::filesystem::exists(state));
  // Resumed from another file, a run leaves the file at its state path alone.
  REQUIRE(sh(SLUICE_CLI " run p.lua --quiet --batches 3 --state other.json > d.log 2>&1") == 0);
  REQUIRE(sh(SLUICE_CLI " run p.lua --quiet --batches 1 > e.log 2>&1") == 0);
  const auto unrelated = read_lines(state);
  REQUIRE(sh(SLUICE_CLI " run p.lua --quiet --resume other.json > f.log 2>&1") == 0);
  CHECK(read_lines(state) == unrelated);
  CHECK(std::filesystem::exists(dir.path() + "/other.json"));
}

TEST_CASE("a bytes field's records agree across prefetch and worker counts", "[cli][determinism]") {
  // Rows of a bytes field hold a length, the bytes, then whatever the slot held
  // before: records digest the length and the bytes only.
  TempDir dir;
  for (int k = 0; k < 40; ++k) dir.write("t" + std::to_string(100 + k) + ".txt", std::string(37 * ((k * 7) % 23) + 1, char('a' + k % 26)));
  const std::string script = dir.write("p.lua", R"(local sluice = require("sluice")
return sluice.pipeline {
  source = sluice.files{ ")" + dir.path() + R"(/*.txt" },
  fields = { { "body", "bytes", 1000 } },
  map = function(s) return { body = s.bytes } end,
  batch_size = 3, shuffle = true, seed = 2, epochs = 2,
}
)");
  std::vector<std::string> records;
  for (const auto& args : std::vector<std::vector<std::string>>{{"-w", "1", "-p", "2"}, {"-w", "1", "-p", "40"},
                                                                {"-w", "2", "-p", "3"}}) {
    records.push_back(dir.path() + "/r" + std::to_string(records.size()) + ".rec");
    std::vector<std::string> run = {"run", script, "--quiet", "--record", records.back()};
    run.insert(run.end(), args.begin(), args.end());
    REQUIRE(sluice::test::run_cli(run).status == 0);
  }
  for (std::size_t k = 1; k < records.size(); ++k) {
    const CliResult same = sluice::test::run_cli({"verify", records[0], records[k]});
    INFO(same.out << same.err);
    REQUIRE(same.status == 0);
  }
}

#endif
