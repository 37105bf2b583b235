#include "supervisor.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>
#include <unistd.h>
#include <utility>

#include "sluice/error.h"
#include "worker.h"

namespace sluice::detail {

namespace {

// A fork that fails with EAGAIN or ENOMEM (a process or memory limit reached
// for a moment) is retried with doubling pauses for about this long.
constexpr int kSpawnRetryMs = 2000;

// The parent of process `pid` from /proc/PID/stat, or -1.
pid_t parent_of(pid_t pid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid));
  std::FILE* f = std::fopen(path, "r");
  if (!f) return -1;
  char text[512];
  const std::size_t n = std::fread(text, 1, sizeof text - 1, f);
  std::fclose(f);
  text[n] = '\0';
  const char* close = std::strrchr(text, ')');  // the name may hold spaces and parentheses
  int ppid = -1;
  char state;
  if (!close || std::sscanf(close + 1, " %c %d", &state, &ppid) != 2) return -1;
  return ppid;
}

// Private memory of worker `pid`: resident pages less those shared with
// others (the arena, libraries), from /proc/PID/statm. 0 if it cannot be
// read, or if `pid` is no longer the zygote's child: a worker that died since
// the last exit report may have had its pid reused by another process. Read
// after statm, the parent proves that statm was the worker's: the zygote
// forks only when asked, and every exit it reported before a fork has been
// handled before the watchdog runs, so a pid it reused is no worker's here.
std::uint64_t private_bytes(pid_t pid, pid_t zygote) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/statm", static_cast<int>(pid));
  std::FILE* f = std::fopen(path, "r");
  if (!f) return 0;
  unsigned long long size = 0, resident = 0, shared = 0;
  int got = std::fscanf(f, "%llu %llu %llu", &size, &resident, &shared);
  std::fclose(f);
  if (got != 3 || resident < shared || parent_of(pid) != zygote) return 0;
  return (resident - shared) * static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
}

std::uint64_t ms_to_ns(std::uint64_t ms) { return ms * 1'000'000ULL; }

}  // namespace

Supervisor::Supervisor(const Arena& arena, const ArenaLayout& layout, const Options& options,
                       std::uint64_t batches_per_epoch)
    : arena_(arena), layout_(layout), options_(options), batches_per_epoch_(batches_per_epoch) {
  kill_reason_.assign(layout_.workers, "");
  watch_from_ns_.assign(layout_.workers, 0);
  retired_fill_ns_.assign(layout_.workers, 0);
  retired_idle_ns_.assign(layout_.workers, 0);
  retired_cpu_ns_.assign(layout_.workers, 0);
  retired_runqueue_ns_.assign(layout_.workers, 0);
}

Supervisor::~Supervisor() { stop(); }

void Supervisor::start(std::function<void(std::uint32_t)> worker_main, std::span<const int> keep_fds) {
  zygote_ = std::make_unique<Zygote>(std::move(worker_main), layout_.workers, keep_fds, arena_.base());
  // Every request first, then the answers: the zygote forks the workers back
  // to back instead of waiting for one round trip each, which on a loaded
  // machine (earlier workers starting up) took 10-15 ms per worker.
  // Every answer is read before any failed fork is tried again: spawn()
  // waits for its own answer only, and would drop the answers still queued.
  for (std::uint32_t w = 0; w < layout_.start_workers; ++w) zygote_->request_spawn(w);
  for (std::uint32_t w = 0; w < layout_.start_workers; ++w) {
    const pid_t pid = zygote_->await_spawn(w);
    if (pid > 0) watch_from_ns_[w] = monotonic_ns();
    pids_.push_back(pid);
  }
  for (std::uint32_t w = 0; w < layout_.start_workers; ++w) {
    if (pids_[w] <= 0) pids_[w] = spawn(w);  // a failed fork: again, with spawn()'s back-off
  }
}

void Supervisor::stop() { zygote_.reset(); }

int Supervisor::event_fd() const { return zygote_ ? zygote_->fd() : -1; }

pid_t Supervisor::spawn(std::uint32_t w) {
  int pause_ms = 5, waited_ms = 0, tries = 0;
  for (;;) {
    const pid_t pid = zygote_->spawn(w);
    ++tries;
    if (pid > 0) {
      watch_from_ns_[w] = monotonic_ns();
      return pid;
    }
    if ((pid != -EAGAIN && pid != -ENOMEM) || waited_ms >= kSpawnRetryMs) {
      throw SpawnFailed("cannot start worker " + std::to_string(w) + ": fork failed: " + std::strerror(-pid) + " (" +
                  std::to_string(tries) + (tries == 1 ? " try" : " tries") +
                  (pid == -EAGAIN ? "; the limit on processes (ulimit -u, or the cgroup's pids.max) is reached)"
                                  : ")"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms));
    waited_ms += pause_ms;
    pause_ms = std::min(pause_ms * 2, 500);
  }
}

std::optional<WorkerExit> Supervisor::next_exit() {
  for (;;) {
    if (!zygote_) return std::nullopt;  // stopped
    std::optional<ZygoteEvent> e = zygote_->poll_exit();
    if (!e) return std::nullopt;
    if (e->kind != ZygoteEvent::exited || e->worker >= layout_.workers) continue;
    const std::uint32_t w = e->worker;
    WorkerExit exit{w, e->pid, describe_wait_status(e->status), !kill_reason_[w].empty()};
    if (exit.by_supervisor) exit.why = std::exchange(kill_reason_[w], "");
    return exit;
  }
}

void Supervisor::replace(std::uint32_t w) {
  WorkerChannel& ch = worker_channel(arena_, layout_, w);
  retired_fill_ns_[w] += ch.fill_ns.load(std::memory_order_relaxed);
  retired_idle_ns_[w] += ch.idle_ns.load(std::memory_order_relaxed);
  retired_cpu_ns_[w] += ch.cpu_ns.load(std::memory_order_relaxed);
  retired_runqueue_ns_[w] += ch.runqueue_ns.load(std::memory_order_relaxed);
  reset_channel(&ch);  // the dead worker can no longer touch it
  pids_[w] = spawn(w);  // on failure the old, dead pid stays: never a pid <= 0, which kill() would misread
}

// A channel of a worker not yet forked is still as LoaderCore reset it
// before the zygote's fork; the parent has pushed no task to it (it gives
// batches only to started workers), and the fork orders the reset before
// the child's first read.
void Supervisor::grow(std::uint32_t count) {
  for (std::uint32_t w = started(); w < count && w < layout_.workers; ++w) pids_.push_back(spawn(w));
}

void Supervisor::kill(std::uint32_t w, std::string reason) {
  kill_reason_[w] = std::move(reason);
  zygote_->kill_worker(w);
}

void Supervisor::assigned(std::uint32_t w) { watch_from_ns_[w] = monotonic_ns(); }

// Reads what the worker publishes: busy_seq with acquire, which makes the
// busy_since_ns or alive_ns stored before it visible (shared_layout.h); a
// value newer than that only delays a kill. Each is one aligned word.
void Supervisor::check_timeout(std::uint32_t w, std::uint32_t outstanding, std::uint64_t now) {
  const WorkerChannel& ch = worker_channel(arena_, layout_, w);
  const std::uint64_t limit = ms_to_ns(options_.batch_timeout_ms);
  const std::uint64_t busy = ch.busy_seq.load(std::memory_order_acquire);
  if (busy != kIdle) {
    const std::uint64_t since = ch.busy_since_ns.load(std::memory_order_relaxed);
    if (now <= since || now - since < limit) return;
    const std::uint64_t per_epoch = batches_per_epoch_;
    kill(w, "timed out after " + std::to_string(options_.batch_timeout_ms) + " ms on epoch " +
                std::to_string(busy / per_epoch) + ", batch " + std::to_string(busy % per_epoch) +
                " (options.batch_timeout_ms) and was killed");
    return;
  }
  if (outstanding == 0) return;
  // Work is waiting for it, and it is not filling: it should take the work
  // within the timeout (start-up may take kStartAllowanceMs).
  const std::uint64_t alive = ch.alive_ns.load(std::memory_order_relaxed);
  const std::uint64_t since = std::max(alive, watch_from_ns_[w]);
  const std::uint64_t allowed = alive == 0 ? std::max(limit, ms_to_ns(kStartAllowanceMs)) : limit;
  if (now <= since || now - since < allowed) return;
  kill(w, std::string("had batches waiting for ") + std::to_string((now - since) / 1'000'000) +
              " ms without taking them (" + (alive == 0 ? "still starting" : "stopped or stuck between batches") +
              "; options.batch_timeout_ms = " + std::to_string(options_.batch_timeout_ms) + ") and was killed");
}

// At most every 100 ms: a worker over worker_memory_mb is killed; its
// death is then handled like a crash, blamed on the sample it was making.
void Supervisor::check_memory(std::uint64_t now) {
  if (now - last_memory_check_ns_ < 100'000'000ULL) return;
  last_memory_check_ns_ = now;
  const std::uint64_t limit = options_.worker_memory_mb << 20;
  for (std::uint32_t w = 0; w < started(); ++w) {
    if (!kill_reason_[w].empty()) continue;
    const std::uint64_t used = private_bytes(pids_[w], zygote_->pid());
    if (used <= limit) continue;
    kill(w, "used " + std::to_string(used >> 20) + " MiB of private memory, over the limit of " +
                std::to_string(options_.worker_memory_mb) +
                " MiB (worker_memory_mb, --worker-memory-mb), and was killed");
  }
}

void Supervisor::watch(std::span<const std::uint32_t> outstanding) {
  if (!zygote_) return;  // stopped
  const std::uint64_t now = monotonic_ns();
  if (options_.batch_timeout_ms != 0) {
    for (std::uint32_t w = 0; w < started(); ++w) {
      if (kill_reason_[w].empty()) check_timeout(w, outstanding[w], now);
    }
  }
  if (options_.worker_memory_mb != 0) check_memory(now);
}

int Supervisor::poll_interval_ms() const {
  int ms = 1000;
  if (options_.batch_timeout_ms != 0) {
    ms = std::min<int>(ms, std::max<int>(1, static_cast<int>(options_.batch_timeout_ms / 4)));
  }
  if (options_.worker_memory_mb != 0) ms = std::min(ms, 100);
  return ms;
}

}  // namespace sluice::detail
