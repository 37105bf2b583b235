// Forks that fail for a moment (EAGAIN: a process limit reached) at start-up
// and when auto workers grow, for every worker position, injected by an
// LD_PRELOAD library (fork_shim.c) into a fresh run of this test program: the
// real fork of a real process fails, as under a cgroup's pids.max.
//
// Each case runs the hidden case "[fork_shim_host]" in a child process with
// the library preloaded and SLUICE_TEST_FAIL_FORK saying which forks fail.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "skip.h"
#include "sluice/error.h"
#include "sluice/loader.h"
#include "sluice/producer.h"

using namespace sluice;
using Clock = std::chrono::steady_clock;

namespace {

std::string self_exe() {
  char path[4096];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  return n > 0 ? std::string(path, static_cast<std::size_t>(n)) : "";
}

struct Run {
  int status = -1;
  std::string output;
  std::int64_t ms = 0;
};

// Runs this program's hidden host case with the shim preloaded; killed after timeout_ms.
Run run_host(const std::string& scenario, const std::string& fail_forks, int timeout_ms) {
  int out[2];
  REQUIRE(pipe2(out, O_CLOEXEC) == 0);
  const std::string exe = self_exe();
  const auto start = Clock::now();
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    dup2(out[1], 1);
    dup2(out[1], 2);
    setenv("LD_PRELOAD", SLUICE_FORK_SHIM, 1);
    setenv("SLUICE_TEST_FAIL_FORK", fail_forks.c_str(), 1);
    setenv("SLUICE_TEST_SCENARIO", scenario.c_str(), 1);
    // A sanitizer runtime wants to be the first library; the shim only wraps fork.
    setenv("ASAN_OPTIONS", "verify_asan_link_order=0", 1);
    unsetenv("SLUICE_SKIP_RETURN_CODE");
    execl(exe.c_str(), exe.c_str(), "[fork_shim_host]", static_cast<char*>(nullptr));
    _exit(127);
  }
  close(out[1]);
  Run r;
  const auto deadline = start + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      kill(child, SIGKILL);
      r.output += "\n(timed out)";
      break;
    }
    pollfd p{out[0], POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left)) <= 0) continue;
    char buf[4096];
    const ssize_t n = read(out[0], buf, sizeof buf);
    if (n <= 0) break;
    r.output.append(buf, static_cast<std::size_t>(n));
  }
  close(out[0]);
  waitpid(child, &r.status, 0);
  r.ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
  return r;
}

// A cross build's tests run under qemu-user, where this program cannot exec
// itself (no binfmt handler) and the shim would be preloaded into the emulator.
bool under_emulator() {
#ifdef SLUICE_TESTS_EMULATED
  return true;
#else
  return self_exe().find("qemu") != std::string::npos;
#endif
}

Options id_options(std::uint64_t n, std::uint32_t batch, std::uint32_t workers, int sleep_us) {
  Options o;
  o.dataset_size = n;
  o.batch_size = batch;
  o.workers = workers;
  o.fields = {{"id", DType::u64, {}}};
  o.producer = per_sample([sleep_us](const SampleRef& s) {
    if (sleep_us > 0) usleep(static_cast<useconds_t>(sleep_us));
    *s.as<std::uint64_t>(0) = s.index;
  });
  return o;
}

// Every sample once, in plan order, each carrying its own id.
void check_all(Loader& loader, std::uint64_t n) {
  std::uint64_t next_id = 0;
  while (auto b = loader.next()) {
    const auto* ids = static_cast<const std::uint64_t*>(b->field(0).data);
    for (std::size_t j = 0; j < b->size(); ++j) {
      REQUIRE(b->sample_ids()[j] == next_id);
      REQUIRE(ids[j] == next_id);
      ++next_id;
    }
  }
  REQUIRE(next_id == n);
}

}  // namespace

// Runs only when named ("[fork_shim_host]"), in a process with the shim.
TEST_CASE("fork shim host", "[.fork_shim_host]") {
  const char* scenario = std::getenv("SLUICE_TEST_SCENARIO");
  REQUIRE(scenario != nullptr);
  if (std::strcmp(scenario, "start") == 0) {
    const auto start = Clock::now();
    Loader loader(id_options(400, 10, 4, 0));
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
    INFO("start-up took " << ms << " ms");
    REQUIRE(ms < 2500);  // one retry's back-off, not the 10 s wait for an answer that was thrown away
    const std::vector<int> pids = loader.worker_pids();
    REQUIRE(pids.size() == 4);
    REQUIRE(std::set<int>(pids.begin(), pids.end()).size() == 4);
    for (int pid : pids) REQUIRE(pid > 0);
    check_all(loader, 400);
    REQUIRE(loader.stats().worker_restarts == 0);
  } else {
    // Auto workers that want to grow (the consumer waits on sleeping
    // workers) while every further fork fails: the run goes on with what it
    // has, and its state counts exactly the batches it handed out.
    Options o = id_options(1200, 10, 1, 1000);
    o.max_workers = 4;
    Loader loader(o);
    std::uint64_t next_id = 0, batches = 0;
    while (auto b = loader.next()) {
      for (std::size_t j = 0; j < b->size(); ++j) REQUIRE(b->sample_ids()[j] == next_id++);
      ++batches;
      REQUIRE(loader.state().batch == batches % loader.plan().batches_per_epoch());
    }
    REQUIRE(next_id == 1200);
    const Stats s = loader.stats();
    INFO("autotune: " << s.autotune);
    REQUIRE(s.autotune.find("could not start more") != std::string::npos);
    REQUIRE(s.workers == 1);
  }
}

TEST_CASE("a fork that fails once at start-up, at any worker's position, is retried", "[supervision][fork_failure]") {
  if (under_emulator()) SKIP_TEST("under qemu-user this program cannot re-run itself with the fork shim preloaded");
  const int position = GENERATE(1, 2, 3, 4);
  const Run r = run_host("start", "1:" + std::to_string(position), 30000);
  INFO("worker position " << position << ", " << r.ms << " ms:\n" << r.output);
  REQUIRE(WIFEXITED(r.status));
  REQUIRE(WEXITSTATUS(r.status) == 0);
}

TEST_CASE("forks failing when auto workers grow stop the tuner, not the run", "[supervision][fork_failure][autotune]") {
  if (under_emulator()) SKIP_TEST("under qemu-user this program cannot re-run itself with the fork shim preloaded");
  const Run r = run_host("growth", "1:2+", 60000);
  INFO(r.ms << " ms:\n" << r.output);
  REQUIRE(WIFEXITED(r.status));
  REQUIRE(WEXITSTATUS(r.status) == 0);
}
