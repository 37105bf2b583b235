// Supervision: the process layer under ordinary host behaviour. Several
// loaders, a host that ignores SIGCHLD, a loader built on a thread that exits,
// scribbled shared memory, failed forks, held slots, stopped workers and
// zygotes. Each case that could hang runs in a child process with a deadline,
// so a regression fails the test instead of hanging the suite.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "shared_layout.h"
#include "skip.h"
#include "sluice/error.h"
#include "sluice/loader.h"
#include "sluice/producer.h"
#include "test_support.h"

using namespace sluice;
using namespace std::chrono_literals;

namespace {

void write_sample(const SampleRef& s) {
  auto* v = s.as<std::uint32_t>(0);
  for (int k = 0; k < 16; ++k) v[k] = static_cast<std::uint32_t>(s.index * 2654435761u + k);
}

Options small_options(std::uint64_t n, std::uint32_t batch, std::uint32_t workers) {
  Options o;
  o.dataset_size = n;
  o.batch_size = batch;
  o.workers = workers;
  o.fields = {{"v", DType::u32, {16}}};
  o.producer = per_sample(write_sample);
  return o;
}

// "" if every batch of the run came out right (ids in plan order, content a
// function of the id), else what was wrong.
std::string consume_all(Loader& loader, std::uint64_t expected_batches) {
  std::uint64_t batches = 0;
  while (auto b = loader.next()) {
    for (std::size_t j = 0; j < b->size(); ++j) {
      const std::uint64_t id = b->sample_ids()[j];
      const auto* v = reinterpret_cast<const std::uint32_t*>(b->field(0).data) + j * 16;
      if (v[3] != static_cast<std::uint32_t>(id * 2654435761u + 3)) return "wrong data for sample " + std::to_string(id);
    }
    ++batches;
  }
  if (batches != expected_batches) {
    return "got " + std::to_string(batches) + " batches, expected " + std::to_string(expected_batches);
  }
  return "";
}

pid_t parent_of(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(f, line);
  const auto close = line.rfind(')');
  if (close == std::string::npos) return -1;
  char state;
  pid_t ppid = -1;
  std::sscanf(line.c_str() + close + 2, "%c %d", &state, &ppid);
  return ppid;
}

std::uint64_t ms_since(std::chrono::steady_clock::time_point t) {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t).count());
}

}  // namespace

namespace {
int g_foreign_pipe = -1;
pid_t g_host_pid = 0;
// The host's SIGTERM handler: it notes any process other than the host that runs it.
void note_foreign_handler(int) {
  const pid_t self = getpid();
  if (self != g_host_pid) [[maybe_unused]] ssize_t n = write(g_foreign_pipe, &self, sizeof self);
}
}  // namespace

TEST_CASE("a signal to the process group while the zygote is forked never runs the host's handler in it", "[supervision]") {
  if (test::proc_shows_emulator_signal_state()) {
    SKIP_TEST("under qemu-user the emulator takes every signal and delivers it to the guest itself: a storm "
              "of them at the process group tests qemu's signal emulation, not the zygote's fork");
  }
  const std::string error = test::in_child(
      [] {
        setpgid(0, 0);  // a group of our own: the signals below reach this process and its children only
        int fds[2];
        if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) return std::string("pipe2 failed");
        g_foreign_pipe = fds[1];
        g_host_pid = getpid();
        struct sigaction sa {};
        sa.sa_handler = note_foreign_handler;
        sa.sa_flags = SA_RESTART;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGTERM, &sa, nullptr);
        std::atomic<bool> done{false};
        std::thread storm([&] {  // SIGTERM to the whole group, as timeout(1) and Slurm send it
          while (!done.load()) {
            kill(0, SIGTERM);
            std::this_thread::sleep_for(std::chrono::microseconds(20));
          }
        });
        std::string result;
        for (int i = 0; i < 40 && result.empty(); ++i) {
          Loader loader(small_options(8, 4, 1));
          result = consume_all(loader, 2);
        }
        done = true;
        storm.join();
        pid_t foreign = 0;
        if (result.empty() && read(fds[0], &foreign, sizeof foreign) == static_cast<ssize_t>(sizeof foreign))
          result = "the host's SIGTERM handler ran in process " + std::to_string(foreign) + ", a child of the loader";
        return result;
      },
      60000);
  REQUIRE(error == "");
  REQUIRE(test::descendants(getpid()).empty());
}

TEST_CASE("several loaders in one process, destroyed in any order, never deadlock", "[supervision]") {
  const std::string error = test::in_child(
      [] {
        for (int order = 0; order < 2; ++order) {
          std::vector<std::unique_ptr<Loader>> loaders;
          for (int i = 0; i < 3; ++i) loaders.push_back(std::make_unique<Loader>(small_options(40, 4, 2)));
          for (auto& l : loaders) {
            if (!l->next()) return std::string("no first batch");
          }
          // Creation order, then reverse creation order.
          if (order == 0) {
            for (auto& l : loaders) l.reset();
          } else {
            while (!loaders.empty()) loaders.pop_back();
          }
        }
        // A vector of Loaders, as tower_options builds, consumed and dropped at scope exit.
        std::vector<Loader> towers;
        towers.reserve(2);
        towers.emplace_back(small_options(24, 4, 1));
        towers.emplace_back(small_options(24, 4, 1));
        for (auto& t : towers) {
          if (std::string e = consume_all(t, 6); !e.empty()) return e;
        }
        return std::string();
      },
      20000);
  REQUIRE(error == "");
  REQUIRE(test::descendants(getpid()).empty());
}

TEST_CASE("a second loader's processes hold none of the first loader's fds, and keep the user's", "[supervision]") {
  int user_pipe[2];  // the user's own fd (a file, an LMDB handle...): workers may read through it
  REQUIRE(pipe(user_pipe) == 0);
  char user_target[64];
  const ssize_t user_len = readlink(("/proc/self/fd/" + std::to_string(user_pipe[0])).c_str(), user_target,
                                    sizeof user_target - 1);
  REQUIRE(user_len > 0);
  Loader first(small_options(40, 4, 1));
  Loader second(small_options(40, 4, 1));
  REQUIRE(first.next());
  REQUIRE(second.next());
  // Every fd of the second loader's worker, by what it points at: none may be
  // the first loader's arena (a memfd), eventfd or socket.
  auto targets = [](pid_t pid) {
    std::vector<std::string> out;
    const std::string dir = "/proc/" + std::to_string(pid) + "/fd";
    for (int fd = 0; fd < 1024; ++fd) {
      char buf[256];
      const ssize_t n = readlink((dir + "/" + std::to_string(fd)).c_str(), buf, sizeof buf - 1);
      if (n > 0) out.emplace_back(buf, static_cast<std::size_t>(n));
    }
    return out;
  };
  const pid_t worker = second.worker_pids()[0];
  const std::vector<std::string> held = targets(worker);
  for (const std::string& t : held) {
    INFO(t);
    REQUIRE(t.find("sluice-arena") == std::string::npos);
    REQUIRE(t.find("socket:") == std::string::npos);
  }
  REQUIRE(std::count(held.begin(), held.end(), std::string(user_target, static_cast<std::size_t>(user_len))) == 2);
  // And no mapping of another arena: exactly one sluice-arena mapping.
  std::ifstream maps("/proc/" + std::to_string(worker) + "/maps");
  std::string line;
  int arenas = 0;
  while (std::getline(maps, line)) arenas += line.find("sluice-arena") != std::string::npos;
  REQUIRE(arenas == 1);
  close(user_pipe[0]);
  close(user_pipe[1]);
}

TEST_CASE("a host that ignores SIGCHLD still gets crashed workers replaced", "[supervision]") {
  const std::string error = test::in_child(
      [] {
        signal(SIGCHLD, SIG_IGN);
        Options o = small_options(400, 8, 2);
        o.epochs = 2;
        Loader loader(o);
        std::uint64_t batches = 0;
        bool killed = false;
        while (auto b = loader.next()) {
          if (++batches == 10 && !killed) killed = kill(loader.worker_pids()[0], SIGKILL) == 0;
        }
        if (!killed) return std::string("could not kill a worker");
        if (batches != 100) return "got " + std::to_string(batches) + " batches";
        if (loader.stats().worker_restarts < 1) return std::string("no restart counted");
        return std::string();
      },
      20000);
  REQUIRE(error == "");
}

TEST_CASE("a loader built on a thread that then exits keeps its workers", "[supervision]") {
  std::unique_ptr<Loader> loader;
  std::thread([&] { loader = std::make_unique<Loader>(small_options(200, 10, 2)); }).join();
  std::this_thread::sleep_for(50ms);  // time for a death signal tied to the thread to arrive, if there were one
  REQUIRE(consume_all(*loader, 20) == "");
}

TEST_CASE("workers and zygote start clean: default signals, empty mask, SIGINT and SIGTERM shrugged off", "[supervision]") {
  if (test::proc_shows_emulator_signal_state()) {
    SKIP_TEST("/proc/PID/status shows the emulator's signal handlers, not the worker's (qemu-user), "
              "so a worker's start-up signal state cannot be read from it");
  }
  struct sigaction old_usr1 {};
  struct sigaction handler {};
  handler.sa_handler = [](int) {};
  sigaction(SIGUSR1, &handler, &old_usr1);
  sigset_t block, old_mask;
  sigemptyset(&block);
  sigaddset(&block, SIGUSR2);
  pthread_sigmask(SIG_BLOCK, &block, &old_mask);
  Loader loader(small_options(40, 4, 1));
  sigaction(SIGUSR1, &old_usr1, nullptr);
  pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  REQUIRE(loader.next());
  const pid_t worker = loader.worker_pids()[0];
  for (pid_t pid : {worker, parent_of(worker)}) {
    std::ifstream status("/proc/" + std::to_string(pid) + "/status");
    std::string key, value;
    unsigned long long blocked = ~0ULL, caught = ~0ULL, ignored = 0;
    while (status >> key >> value) {
      if (key == "SigBlk:") blocked = std::stoull(value, nullptr, 16);
      if (key == "SigCgt:") caught = std::stoull(value, nullptr, 16);
      if (key == "SigIgn:") ignored = std::stoull(value, nullptr, 16);
    }
    INFO("pid " << pid);
    // The zygote blocks SIGCHLD only (it reads it from a signalfd); a worker blocks nothing.
    REQUIRE((blocked & ~(1ULL << (SIGCHLD - 1))) == 0);
    REQUIRE((caught & (1ULL << (SIGUSR1 - 1))) == 0);
    // Caught by a handler that does nothing, not ignored: SIG_IGN would outlive execve.
    REQUIRE((caught & (1ULL << (SIGINT - 1))) != 0);
    REQUIRE((caught & (1ULL << (SIGTERM - 1))) != 0);
    REQUIRE((ignored & ((1ULL << (SIGINT - 1)) | (1ULL << (SIGTERM - 1)))) == 0);
  }
  REQUIRE(kill(worker, SIGINT) == 0);
  REQUIRE(kill(worker, SIGTERM) == 0);
  std::uint64_t batches = 1;
  while (loader.next()) ++batches;
  REQUIRE(batches == 10);
  REQUIRE(loader.stats().worker_restarts == 0);
}

TEST_CASE("a program a worker runs gets SIGINT's default back: Ctrl-C stops it", "[supervision]") {
  Options o = small_options(8, 4, 1);
  o.fields = {{"v", DType::i32, {}}};
  o.producer = per_sample([](const SampleRef& s) {
    // The shell sends itself SIGINT: with SIGINT ignored in the worker it
    // would stay ignored in the shell, which then exits 0.
    const int status = std::system("kill -INT $$; exit 7");
    *s.as<std::int32_t>(0) = WIFSIGNALED(status) ? WTERMSIG(status) : -WEXITSTATUS(status);
  });
  Loader loader(o);
  auto b = loader.next();
  REQUIRE(b);
  REQUIRE(reinterpret_cast<const std::int32_t*>(b->field(0).data)[0] == SIGINT);
}

TEST_CASE("a scribbled slot header is an error, never a crash of the consumer", "[supervision]") {
  Options o = small_options(100, 10, 1);
  const std::uint64_t field_offset = detail::ArenaLayout::compute(o).field_offsets[0];
  auto scribble = [field_offset](const SampleRef& s) {
    auto* header = reinterpret_cast<detail::SlotHeader*>(s.batch.data(0) - field_offset);
    header->size = 0xfffffff0u;  // a size that would read far past the slot
    std::memset(header->error, 'x', sizeof header->error);  // and no terminating NUL
  };
  SECTION("in a batch that completes") {
    o.producer = per_sample([&](const SampleRef& s) {
      write_sample(s);
      if (s.index == 35) scribble(s);
    });
  }
  SECTION("in a batch whose producer then throws") {
    o.producer = per_sample([&](const SampleRef& s) {
      write_sample(s);
      if (s.index == 35) {
        scribble(s);
        throw std::runtime_error("bad sample");
      }
    });
  }
  Loader loader(o);
  std::string message;
  try {
    while (loader.next()) {
    }
  } catch (const Error& e) {
    message = e.what();
  }
  REQUIRE(message.find("overwritten") != std::string::npos);
  REQUIRE(message.find("epoch 0, batch 3") != std::string::npos);
  REQUIRE_THROWS_WITH(loader.next(), message);  // the one failure, raised again
}

TEST_CASE("a worker that cannot be re-forked fails the run with the reason, every time", "[supervision]") {
  const std::string error = test::in_child(
      [] {
        // Root is exempt from RLIMIT_NPROC: run as nobody to make fork() fail for real.
        if (geteuid() == 0 && setuid(65534) != 0) return std::string("setuid failed");
        Options o = small_options(1000, 10, 2);
        o.epochs = 0;
        Loader loader(o);
        if (!loader.next()) return std::string("no first batch");
        const pid_t worker = loader.worker_pids()[0];
        const pid_t zygote = parent_of(worker);
        const rlimit none{0, 0};
        if (prlimit(zygote, RLIMIT_NPROC, &none, nullptr) != 0) return std::string("prlimit failed");
        kill(worker, SIGKILL);
        std::string first;
        const auto start = std::chrono::steady_clock::now();
        try {
          for (int i = 0; i < 1000000; ++i) loader.next();
          return std::string("the run went on without worker 0");
        } catch (const Error& e) {
          first = e.what();
        }
        if (first.find("could not be replaced") == std::string::npos ||
            first.find("Resource temporarily unavailable") == std::string::npos) {
          return "unexpected error: " + first;
        }
        if (ms_since(start) > 10000) return std::string("the failure took over 10 s");
        try {
          loader.next();
        } catch (const Error& e) {
          if (e.what() != first) return "a different second error: " + std::string(e.what());
          return std::string();
        }
        return std::string("the second next() did not raise");
      },
      30000);
  REQUIRE(error == "");
}

TEST_CASE("a consumer that holds every slot gets an error, and can go on after a release", "[supervision]") {
  Options o = small_options(1000, 10, 2);
  o.slots = 3;
  o.held_timeout_ms = 300;
  Loader loader(o);
  std::vector<Batch> held;
  for (int i = 0; i < 3; ++i) held.push_back(*loader.next());
  const auto start = std::chrono::steady_clock::now();
  REQUIRE_THROWS_WITH(loader.next(), Catch::Contains("all 3 batch slots") && Catch::Contains("prefetch=") && Catch::Contains("Options::slots"));
  REQUIRE(ms_since(start) >= 300);
  REQUIRE(ms_since(start) < 3000);
  held.erase(held.begin());
  auto b = loader.next();
  REQUIRE(b);
  REQUIRE(b->index() == 3);
}

TEST_CASE("the watchdog kills a worker stopped between batches", "[supervision]") {
  const std::string error = test::in_child(
      [] {
        Options o = small_options(600, 10, 2);
        o.batch_timeout_ms = 300;
        // Workers slower than the consumer, so that both always owe batches: with
        // a fast producer one worker can make them all, and a stopped idle worker
        // owes nothing for the watchdog to see.
        o.producer = per_sample([](const SampleRef& s) {
          std::this_thread::sleep_for(std::chrono::microseconds(200));
          write_sample(s);
        });
        Loader loader(o);
        std::uint64_t batches = 0;
        bool stopped = false;
        while (auto b = loader.next()) {
          if (++batches == 5) {
            // Between two batches, with more assigned: stop it.
            stopped = kill(loader.worker_pids()[1], SIGSTOP) == 0;
          }
        }
        if (!stopped) return std::string("could not stop a worker");
        if (batches != 60) return "got " + std::to_string(batches) + " batches";
        if (loader.stats().worker_restarts < 1) return std::string("the stopped worker was not replaced");
        return std::string();
      },
      20000);
  REQUIRE(error == "");
}

TEST_CASE("the watchdog kills a worker stopped during start-up", "[supervision][slow]") {
  const std::string error = test::in_child(
      [] {
        Options o = small_options(100, 10, 2);
        o.batch_timeout_ms = 200;
        struct SlowStart : Producer {
          void start_worker(std::uint32_t) override { std::this_thread::sleep_for(300ms); }
          void fill(BatchContext& ctx) override {
            for (std::size_t j = 0; j < ctx.size(); ++j) write_sample(SampleRef{ctx, j, ctx.samples()[j]});
          }
        };
        o.producer = std::make_shared<SlowStart>();
        Loader loader(o);
        kill(loader.worker_pids()[0], SIGSTOP);  // still sleeping in start_worker
        if (std::string e = consume_all(loader, 10); !e.empty()) return e;
        if (loader.stats().worker_restarts < 1) return std::string("the stopped worker was not replaced");
        return std::string();
      },
      40000);
  REQUIRE(error == "");
}

TEST_CASE("a stopped zygote does not block the loader's destruction", "[supervision]") {
  auto loader = std::make_unique<Loader>(small_options(100, 10, 2));
  REQUIRE(loader->next());
  const pid_t zygote = parent_of(loader->worker_pids()[0]);
  REQUIRE(kill(zygote, SIGSTOP) == 0);
  const auto start = std::chrono::steady_clock::now();
  loader.reset();
  REQUIRE(ms_since(start) < 5000);
  REQUIRE(test::wait_for_no_descendants(getpid(), 2000).empty());
}

TEST_CASE("kills from outside spread over epochs never add up against a sample", "[supervision][faults]") {
  // Sample 7 crashes its worker the first time it is made in each epoch, then
  // succeeds: one failure per epoch, fewer than max_retries in a row.
  char dir[] = "/tmp/sluice-kills-XXXXXX";
  REQUIRE(mkdtemp(dir) != nullptr);
  const std::string marks = dir;
  Options o = small_options(40, 4, 2);
  o.epochs = 5;
  o.max_retries = 2;
  o.producer = per_sample([marks](const SampleRef& s) {
    if (s.index == 7) {
      const std::string mark = marks + "/epoch" + std::to_string(s.batch.epoch());
      if (access(mark.c_str(), F_OK) != 0) {
        std::ofstream(mark).put('x');
        raise(SIGKILL);
      }
    }
    write_sample(s);
  });
  Loader loader(o);
  REQUIRE(consume_all(loader, 50) == "");
  REQUIRE(loader.stats().worker_restarts == 5);
  REQUIRE(loader.stats().skipped_samples.empty());
  std::system(("rm -rf " + marks).c_str());
}

TEST_CASE("chaos: kill -9 and SIGSTOP of random workers change nothing the consumer sees", "[supervision][chaos]") {
  Options o = small_options(480, 8, 3);
  o.shuffle = true;
  o.seed = 77;
  o.epochs = 4;
  o.batch_timeout_ms = 250;
  std::vector<std::vector<std::uint64_t>> clean;
  {
    Loader loader(o);
    while (auto b = loader.next()) clean.emplace_back(b->sample_ids().begin(), b->sample_ids().end());
  }
  const std::string error = test::in_child(
      [&] {
        std::mt19937 rng(2024);
        Loader loader(o);
        std::size_t i = 0;
        int faults = 0;
        while (auto b = loader.next()) {
          if (i >= clean.size()) return std::string("more batches than the clean run");
          if (!std::equal(clean[i].begin(), clean[i].end(), b->sample_ids().begin(), b->sample_ids().end())) {
            return "batch " + std::to_string(i) + " differs from the clean run";
          }
          const auto* v = reinterpret_cast<const std::uint32_t*>(b->field(0).data);
          for (std::size_t j = 0; j < b->size(); ++j) {
            if (v[j * 16] != static_cast<std::uint32_t>(b->sample_ids()[j] * 2654435761u)) return std::string("bad data");
          }
          ++i;
          if (i % 12 == 0) {
            const auto pids = loader.worker_pids();
            kill(pids[rng() % pids.size()], rng() % 2 ? SIGKILL : SIGSTOP);
            ++faults;
          }
        }
        if (i != clean.size()) return "got " + std::to_string(i) + " batches of " + std::to_string(clean.size());
        if (loader.stats().worker_restarts < 1) return std::string("no worker was replaced");
        return std::string();
      },
      60000);
  REQUIRE(error == "");
}

TEST_CASE("a polling host: try_next never blocks, ready_fd wakes it for batches and for crashes", "[supervision][poll]") {
  Options o = small_options(60, 6, 2);
  o.producer = per_sample([](const SampleRef& s) {
    std::this_thread::sleep_for(50ms);  // a batch takes ~300 ms: most polls find nothing
    write_sample(s);
  });
  Loader loader(o);
  const int fd = loader.ready_fd();
  std::uint64_t batches = 0, empty_polls = 0, slowest_try_us = 0;
  bool killed = false;
  while (!loader.finished()) {
    pollfd p{fd, POLLIN, 0};
    REQUIRE(poll(&p, 1, 5000) == 1);  // never a 5 s silence while work remains
    for (;;) {
      const auto start = std::chrono::steady_clock::now();
      std::optional<Batch> b = loader.try_next();
      slowest_try_us = std::max<std::uint64_t>(
          slowest_try_us,
          std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start).count());
      if (!b) {
        ++empty_polls;
        break;
      }
      for (std::size_t j = 0; j < b->size(); ++j) {
        const auto* v = reinterpret_cast<const std::uint32_t*>(b->field(0).data) + j * 16;
        REQUIRE(v[0] == static_cast<std::uint32_t>(b->sample_ids()[j] * 2654435761u));
      }
      REQUIRE(b->index() == batches);
      ++batches;
      if (batches == 3 && !killed) killed = kill(loader.worker_pids()[0], SIGKILL) == 0;
    }
  }
  REQUIRE(killed);
  REQUIRE(batches == 10);
  REQUIRE(loader.stats().worker_restarts >= 1);
  REQUIRE(empty_polls > 0);
  INFO("slowest try_next: " << slowest_try_us << " us");
  REQUIRE(slowest_try_us < 100'000);  // a try that waited for a batch would take ~300 ms
}

TEST_CASE("next_for returns within its timeout when no batch is ready", "[supervision][poll]") {
  Options o = small_options(40, 4, 1);
  o.producer = per_sample([](const SampleRef& s) {
    std::this_thread::sleep_for(500ms);
    write_sample(s);
  });
  Loader loader(o);
  const auto start = std::chrono::steady_clock::now();
  REQUIRE_FALSE(loader.next_for(100ms));
  const auto took = ms_since(start);
  REQUIRE(took >= 100);
  REQUIRE(took < 400);
  REQUIRE_FALSE(loader.finished());
  auto b = loader.next_for(10s);
  REQUIRE(b);
  REQUIRE(b->index() == 0);
}

TEST_CASE("a forked child that destroys its copy of a loader and of a batch leaves the parent's run alone", "[supervision][fork]") {
  auto loader = std::make_unique<Loader>(small_options(400, 4, 2));
  std::optional<Batch> held = loader->next();
  REQUIRE(held);
  const std::vector<int> workers = loader->worker_pids();
  const pid_t child = fork();  // as the host's own fork would: multiprocessing, a tool it spawns
  if (child == 0) {
    held.reset();    // the child's copy of the batch: its slot is the parent's
    loader.reset();  // the child's copy of the loader: its workers are the parent's
    _exit(0);
  }
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  held.reset();
  REQUIRE(consume_all(*loader, 99) == "");  // the other 99 batches, right and in order
  REQUIRE(loader->stats().worker_restarts == 0);
  REQUIRE(loader->worker_pids() == workers);
}

namespace {
std::optional<Batch>* stale_batch = nullptr;  // another loader's batch, as a worker inherits it
}

TEST_CASE("another loader's worker that drops its copy of this loader's batch changes nothing", "[supervision][fork]") {
  Loader first(small_options(40, 4, 1));
  std::optional<Batch> held = first.next();
  REQUIRE(held);
  stale_batch = &held;
  Options o = small_options(40, 4, 2);
  o.producer = per_sample([](const SampleRef& s) {
    stale_batch->reset();  // in the worker: first's arena is not even mapped here (owned_resources.h)
    write_sample(s);
  });
  Loader second(std::move(o));
  REQUIRE(consume_all(second, 10) == "");
  REQUIRE(second.stats().worker_restarts == 0);
  REQUIRE(held->sample_ids()[0] == 0);  // the parent's batch is still held, and whole
  held.reset();
  stale_batch = nullptr;
  REQUIRE(consume_all(first, 9) == "");
}
