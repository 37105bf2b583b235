// supervisor.h: owns the zygote and the worker processes of one Loader.
//
// The scheduler (LoaderCore) decides what each worker does; the Supervisor
// keeps the processes that do it alive and honest:
// - starts them, replaces one that died (a fork that fails for lack of
//   processes or memory is retried for a while before it becomes an error),
//   and kills one on request, remembering why;
// - reports every exit with a reason ("killed by signal 11", or the reason it
//   was killed for);
// - is the watchdog: with batch_timeout_ms, a worker is killed when it fills
//   one batch for longer than that, or has batches assigned and shows no sign
//   of life for that long (stopped between batches, or during start-up, which
//   gets at least kStartAllowanceMs); with worker_memory_mb, when its
//   private memory exceeds the limit.
// Every failure is a sluice::Error thrown to the caller, which turns it into
// the Loader's one failure.
//
// Single-threaded: used only on the consumer's thread, inside next().
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "arena.h"
#include "shared_layout.h"
#include "sluice/error.h"
#include "sluice/options.h"
#include "zygote.h"

namespace sluice::detail {

// A worker start-up (a pipeline script loading, say) may take this long even
// under a tighter batch_timeout_ms.
inline constexpr std::uint64_t kStartAllowanceMs = 10'000;

// A worker could not be forked (a process or memory limit, say): what a
// caller may live with, unlike a zygote that died or does not answer.
struct SpawnFailed : Error {
  using Error::Error;
};

struct WorkerExit {
  std::uint32_t worker;
  pid_t pid;
  std::string why;      // "killed by signal 9 (Killed)", or why the supervisor killed it
  bool by_supervisor;   // the watchdog or the memory limit killed it
};

class Supervisor {
 public:
  Supervisor(const Arena& arena, const ArenaLayout& layout, const Options& options, std::uint64_t batches_per_epoch);
  ~Supervisor();

  // Forks the zygote and every worker. keep_fds: the Loader's fds the workers use.
  void start(std::function<void(std::uint32_t)> worker_main, std::span<const int> keep_fds);
  // Stops and reaps every process. Idempotent.
  void stop();

  // Readable when the zygote has an event (or died).
  int event_fd() const;
  // The next exit, without blocking. Throws Error if the zygote itself died.
  std::optional<WorkerExit> next_exit();
  // An exit already read from the zygote (while a spawn was awaited): event_fd()
  // no longer shows it, next_exit() returns it.
  bool exit_pending() const { return zygote_ && zygote_->exit_pending(); }
  // Gives worker w a fresh channel and a fresh process. Throws Error
  // (SpawnFailed if the fork itself kept failing).
  void replace(std::uint32_t w);
  // Forks workers until `count` run (auto workers: at most layout.workers),
  // each on the fresh channel the loader reset before the fork. Throws Error
  // (SpawnFailed if a fork kept failing; the workers forked so far stay).
  void grow(std::uint32_t count);
  // Workers forked so far: ids [0, started()).
  std::uint32_t started() const { return static_cast<std::uint32_t>(pids_.size()); }

  // The scheduler gave worker w work while it had none: the watchdog's clock
  // for an idle worker starts now.
  void assigned(std::uint32_t w);
  // Kills workers over the batch timeout or the memory limit.
  void watch(std::span<const std::uint32_t> outstanding);
  // How long the consumer may sleep before the watchdog must look again.
  int poll_interval_ms() const;

  std::vector<int> pids() const { return {pids_.begin(), pids_.end()}; }
  // Fill and idle time of worker processes already replaced.
  std::uint64_t retired_fill_ns(std::uint32_t w) const { return retired_fill_ns_[w]; }
  std::uint64_t retired_idle_ns(std::uint32_t w) const { return retired_idle_ns_[w]; }
  std::uint64_t retired_cpu_ns(std::uint32_t w) const { return retired_cpu_ns_[w]; }
  std::uint64_t retired_runqueue_ns(std::uint32_t w) const { return retired_runqueue_ns_[w]; }

 private:
  void kill(std::uint32_t w, std::string reason);
  pid_t spawn(std::uint32_t w);
  void check_timeout(std::uint32_t w, std::uint32_t outstanding, std::uint64_t now);
  void check_memory(std::uint64_t now);

  const Arena& arena_;
  const ArenaLayout& layout_;
  const Options& options_;
  std::uint64_t batches_per_epoch_;
  std::unique_ptr<Zygote> zygote_;
  std::vector<pid_t> pids_;
  std::vector<std::string> kill_reason_;       // per worker: why the supervisor killed it, until it exits
  std::vector<std::uint64_t> watch_from_ns_;   // per worker: (re)spawned, or given work while idle
  std::vector<std::uint64_t> retired_fill_ns_, retired_idle_ns_, retired_cpu_ns_, retired_runqueue_ns_;
  std::uint64_t last_memory_check_ns_ = 0;
};

}  // namespace sluice::detail
