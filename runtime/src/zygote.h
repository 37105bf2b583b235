// zygote.h: a single-threaded process that forks the workers.
//
// The Supervisor forks the zygote once, after the arena is mapped. The zygote
// then does nothing but fork workers on request and report their exits, so
// every worker is forked from a process with exactly one thread, however many
// threads (or CUDA contexts) the host has by then. A replacement worker can be
// forked at any time the same way.
//
// Clean children: right after the fork the zygote closes every fd and unmaps
// every arena that other Loaders of the host registered (owned_resources.h),
// resets every signal disposition to the default and empties the signal mask
// (a host that ignores SIGCHLD would otherwise have its workers reaped by the
// kernel, unseen). SIGINT and SIGTERM do nothing in the zygote and the
// workers (a handler that returns, so a program a worker executes gets the
// defaults back): they reach the whole process group, and the Loader's owner
// decides what they mean (save the state, then destroy the Loader).
//
// Lifetimes follow processes, not threads: the zygote watches the host
// process through a pidfd (or, on kernels without pidfd_open, polls
// getppid()), so a Loader built on a thread that then exits keeps working.
// Each worker dies with the zygote (PR_SET_PDEATHSIG = SIGKILL; the zygote is
// single-threaded, so its thread is its process), plus a getppid() check for
// the race where the zygote died before prctl.
//
// Protocol: a SOCK_SEQPACKET socketpair. Loader -> zygote: a worker id to
// spawn, or to kill (with kKillFlag), or kStopWord. Zygote -> loader:
// ZygoteEvent {spawned | exited}. SIGCHLD reaches the zygote through a
// signalfd, so a worker's death is reported at once. On kStopWord, EOF or the
// host's death the zygote SIGKILLs and reaps every worker, then exits. The
// destructor sends kStopWord and waits a bounded time for the zygote's exit
// (on its pidfd, so a host that ignores SIGCHLD or has other children never
// blocks it; without pidfd, polling its wait status); a zygote that does not
// exit in time (stopped, say) is killed.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <sys/types.h>

namespace sluice::detail {

inline constexpr std::uint32_t kKillFlag = 0x80000000u;
inline constexpr std::uint32_t kStopWord = 0xffffffffu;

struct ZygoteEvent {
  enum Kind : std::uint32_t { spawned = 1, exited = 2 } kind;
  std::uint32_t worker;
  std::int32_t pid;
  std::int32_t status;  // wait status, for exited; errno of a failed fork, for spawned with pid <= 0
};

// "exited with status 3", "killed by signal 9 (Killed)".
std::string describe_wait_status(int status);

class Zygote {
 public:
  // Forks the zygote. worker_main runs in each forked worker and must not
  // return (it ends with _exit). max_workers bounds the ids passed to spawn.
  // keep_fds and keep_mapping: this Loader's own fds and arena, which the
  // workers use; every other registered resource is released in the child.
  Zygote(std::function<void(std::uint32_t)> worker_main, std::uint32_t max_workers, std::span<const int> keep_fds,
         const void* keep_mapping);
  // Stops the zygote (it kills and reaps the workers) and reaps it.
  ~Zygote();
  Zygote(const Zygote&) = delete;
  Zygote& operator=(const Zygote&) = delete;

  // Forks worker `id` and returns its pid, or -errno if the fork failed.
  // Throws Error if the zygote is gone or does not answer.
  pid_t spawn(std::uint32_t id);
  // spawn() in two halves, so that a loader can ask for every worker before
  // waiting for the first answer (answers come in request order).
  void request_spawn(std::uint32_t id);
  pid_t await_spawn(std::uint32_t id);

  // Has the zygote SIGKILL worker `id` (race-free: the zygote is its parent and
  // has not reaped it, so the pid cannot have been reused). Its exit is
  // reported like any other.
  void kill_worker(std::uint32_t id);

  // Readable when an event is waiting or the zygote has died.
  int fd() const { return sock_; }

  // The next exit report, without blocking; nullopt if none is waiting. Throws
  // Error if the zygote itself has died.
  std::optional<ZygoteEvent> poll_exit();
  // An exit report read while awaiting a spawn and not yet taken by
  // poll_exit(): it no longer makes fd() readable.
  bool exit_pending() const;

  pid_t pid() const { return pid_; }

 private:
  void request(std::uint32_t word);
  std::optional<ZygoteEvent> receive(int timeout_ms);
  [[noreturn]] void fail_gone() const;
  pid_t pid_ = -1;
  int sock_ = -1;
  int pidfd_ = -1;  // the zygote's pidfd; -1 where the kernel has none
  std::deque<ZygoteEvent> pending_exits_;
};

}  // namespace sluice::detail
