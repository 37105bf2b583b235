// zygote.h: a single-threaded process that forks the workers.
//
// The Loader forks the zygote once, after the arena is mapped and before it
// starts any thread of its own. The zygote then does nothing but fork workers
// on request and report their exits, so every worker is forked from a process
// with exactly one thread, however many threads (or CUDA contexts) the host
// has by then. A replacement worker can be forked at any time the same way.
//
// Lifetimes: the zygote dies with the thread that created it, and each worker
// with the zygote (PR_SET_PDEATHSIG = SIGKILL, plus a getppid() check against
// the race where the parent died before prctl). When the Loader closes its end
// of the socket the zygote SIGKILLs and reaps every worker, then exits; the
// Loader reaps the zygote. No zombie, no orphan.
//
// Protocol: a SOCK_SEQPACKET socketpair. Loader -> zygote: a worker id to
// spawn, or to kill (with kKillFlag). Zygote -> loader: ZygoteEvent {spawned | exited}. SIGCHLD reaches the
// zygote through a signalfd, so a worker's death is reported at once.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <sys/types.h>

namespace sluice::detail {

inline constexpr std::uint32_t kKillFlag = 0x80000000u;

struct ZygoteEvent {
  enum Kind : std::uint32_t { spawned = 1, exited = 2 } kind;
  std::uint32_t worker;
  std::int32_t pid;
  std::int32_t status;  // wait status, for exited
};

// "exited with status 3", "killed by signal 9 (Killed)".
std::string describe_wait_status(int status);

class Zygote {
 public:
  // Forks the zygote. worker_main runs in each forked worker and must not
  // return (it ends with _exit). max_workers bounds the ids passed to spawn.
  Zygote(std::function<void(std::uint32_t)> worker_main, std::uint32_t max_workers);
  // Closes the socket; the zygote kills and reaps the workers and exits; reaps it.
  ~Zygote();
  Zygote(const Zygote&) = delete;
  Zygote& operator=(const Zygote&) = delete;

  // Forks worker `id` and returns its pid. Throws Error if the zygote is gone.
  pid_t spawn(std::uint32_t id);

  // Has the zygote SIGKILL worker `id` (race-free: the zygote is its parent and
  // has not reaped it, so the pid cannot have been reused). Its exit is
  // reported like any other.
  void kill_worker(std::uint32_t id);

  // Readable when an event is waiting or the zygote has died.
  int fd() const { return sock_; }

  // The next exit report, without blocking; nullopt if none is waiting. Throws
  // Error if the zygote itself has died.
  std::optional<ZygoteEvent> poll_exit();

  pid_t pid() const { return pid_; }

 private:
  void request(std::uint32_t word);
  std::optional<ZygoteEvent> receive(bool block);
  pid_t pid_ = -1;
  int sock_ = -1;
  std::deque<ZygoteEvent> pending_exits_;
};

}  // namespace sluice::detail
