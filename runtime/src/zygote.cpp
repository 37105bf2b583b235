#include "zygote.h"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <limits>
#include <malloc.h>
#include <poll.h>
#include <pthread.h>
#include <stdio_ext.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

#include "child_signals.h"
#include "owned_resources.h"
#include "sluice/error.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif

namespace sluice::detail {

std::string describe_wait_status(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    const char* name = strsignal(sig);
    std::string text = "killed by signal " + std::to_string(sig) + " (" + (name ? name : "?") + ")";
    // A memory-mapped file cut short under the run (an .npy, a token file)
    // faults this way on its first page past the new end.
    if (sig == SIGBUS)
      text += ": a memory-mapped data file (.npy, a token file) that was truncated or replaced while the run read it?";
    return text;
  }
  return "stopped (wait status " + std::to_string(status) + ")";
}

namespace {

// How long the destructor waits for the zygote to reap its workers and exit
// before killing it, and how long spawn() waits for an answer.
constexpr int kStopWaitMs = 2000;
constexpr int kAnswerWaitMs = 10000;

int pidfd_open(pid_t pid) { return static_cast<int>(syscall(SYS_pidfd_open, pid, 0)); }

// Workers keep the memory they free, to use again: blocks up to 32 MiB
// (glibc's highest mmap threshold) come from the heap instead of fresh mmaps,
// and the heap is not trimmed. A worker decodes file after file, and libjpeg
// allocates (and, for a progressive JPEG, zeroes) tens of MiB per large image:
// fresh pages each time cost a page fault per 4 KiB, a third of the decode of
// a 16 MP photo. A worker's memory so stays at its peak, as scratch does
// (what Options::worker_memory_mb sees).
void keep_freed_memory() {
#ifdef __GLIBC__
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, std::numeric_limits<int>::max());
#endif
}

void send_event(int sock, const ZygoteEvent& e) {
  // MSG_NOSIGNAL: if the loader is gone, this fails instead of raising SIGPIPE.
  while (send(sock, &e, sizeof e, MSG_NOSIGNAL) < 0 && errno == EINTR) {
  }
}

// In a process that a worker's own code forks (a multiprocessing Pool in a
// Python dataset, a fork in a C++ producer), SIGINT and SIGTERM are back at
// their defaults: its parent must be able to stop it (Pool.terminate() sends
// SIGTERM). A pthread_atfork child handler, set in the zygote, passed over
// in the zygote's own forks of workers (forking_worker), which keep
// shrugging them off. (posix_spawn and popen do not run it; execve resets
// handlers anyway.)
bool forking_worker = false;

void default_stop_signals() {
  if (forking_worker) return;
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
}

// Forks worker `id`. The child starts as clean as the zygote, without the
// zygote's own fds, and dies with it.
pid_t fork_worker(std::uint32_t id, int sock, int sfd, int host, pid_t self,
                  const std::function<void(std::uint32_t)>& worker_main) {
  forking_worker = true;
  const pid_t pid = fork();
  forking_worker = false;  // in the worker too: its own forks get the defaults
  if (pid != 0) return pid;
  close(sfd);
  if (host >= 0) close(host);
  close(sock);
  reset_child_signals();
  keep_freed_memory();
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != self) _exit(1);
  worker_main(id);
  std::fflush(stdout);  // what the producer printed last (_exit flushes nothing)
  _exit(0);
}

// The zygote's whole life. Uses only fork, waitpid, kill, poll and socket
// calls on memory allocated before the fork, so it is safe even when the
// process it was forked from had other threads.
[[noreturn]] void zygote_main(int sock, pid_t loader, const std::function<void(std::uint32_t)>& worker_main,
                              std::vector<pid_t>& live) {
  reset_child_signals();
  pthread_atfork(nullptr, nullptr, default_stop_signals);
  // What the host had printed but not yet flushed is the host's to write:
  // dropped here, so that a worker's flush (worker.cpp) writes its own only.
  __fpurge(stdout);
  __fpurge(stderr);
  // The host process, not the thread that forked us: a pidfd is readable once
  // the whole process has exited. Checked against getppid() for the race
  // where it died before pidfd_open.
  const int host = pidfd_open(loader);
  if (getppid() != loader) _exit(1);
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  sigprocmask(SIG_BLOCK, &chld, nullptr);
  const int sfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sfd < 0) _exit(1);
  const pid_t self = getpid();

  for (;;) {
    pollfd fds[3] = {{sock, POLLIN, 0}, {sfd, POLLIN, 0}, {host, POLLIN, 0}};
    const int ready = poll(fds, host >= 0 ? 3 : 2, host >= 0 ? -1 : 1000);
    if (ready < 0 && errno != EINTR) break;
    if ((host >= 0 && (fds[2].revents & POLLIN)) || (host < 0 && getppid() != loader)) break;  // host gone
    if (ready <= 0) continue;
    if (fds[1].revents & POLLIN) {
      signalfd_siginfo info;
      while (read(sfd, &info, sizeof info) > 0) {
      }
      int status = 0;
      pid_t pid;
      while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
        for (std::uint32_t id = 0; id < live.size(); ++id) {
          if (live[id] != pid) continue;
          live[id] = 0;
          send_event(sock, {ZygoteEvent::exited, id, pid, status});
        }
      }
    }
    if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      std::uint32_t word = 0;
      ssize_t n = recv(sock, &word, sizeof word, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n != sizeof word || word == kStopWord) break;  // EOF or stop: the loader is done with us
      if (word & kKillFlag) {
        const std::uint32_t id = word & ~kKillFlag;
        if (id < live.size() && live[id] > 0) kill(live[id], SIGKILL);
        continue;
      }
      if (word >= live.size()) break;
      const pid_t pid = fork_worker(word, sock, sfd, host, self, worker_main);
      if (pid > 0) live[word] = pid;
      send_event(sock, {ZygoteEvent::spawned, word, pid, pid > 0 ? 0 : errno});
    }
  }
  for (pid_t pid : live) {
    if (pid > 0) kill(pid, SIGKILL);
  }
  for (pid_t pid : live) {
    if (pid > 0) waitpid(pid, nullptr, 0);
  }
  _exit(0);
}

}  // namespace

Zygote::Zygote(std::function<void(std::uint32_t)> worker_main, std::uint32_t max_workers,
               std::span<const int> keep_fds, const void* keep_mapping) {
  std::vector<pid_t> live(max_workers, 0);  // allocated before the fork
  std::vector<int> keep(keep_fds.begin(), keep_fds.end());
  keep.push_back(-1);  // the zygote's end of the socket, filled in below
  const pid_t loader = getpid();
  int sv[2];
  {
    OwnedLock lock;  // registered as they are made: no fork, here or on another thread, copies them unseen
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
      throw Error(std::string("socketpair failed: ") + std::strerror(errno));
    }
    register_fd(sv[0]);
    register_fd(sv[1]);
  }
  keep.back() = sv[1];
  // No lock is held across the fork: the pthread_atfork handlers take the
  // registry's around it, as around every fork of the process (holding it
  // here too would deadlock a host thread forking at the same time with a C
  // library that runs the handlers under its own atfork lock).
  // Every signal blocked across the fork, so that no handler of the host's
  // runs in the zygote before reset_child_signals() puts its own in place (a signal
  // sent to the process group in between, by timeout(1) or Slurm, waits
  // pending until then, and meets the zygote's disposition); the parent gets
  // its mask back at once.
  sigset_t all, host_mask;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &host_mask);
  pid_ = fork();
  const int fork_errno = errno;
  if (pid_ != 0) pthread_sigmask(SIG_SETMASK, &host_mask, nullptr);
  if (pid_ < 0) {
    const int err = fork_errno;
    OwnedLock lock;
    for (int fd : sv) {
      unregister_fd(fd);
      close(fd);
    }
    throw Error(std::string("fork of the worker zygote failed: ") + std::strerror(err));
  }
  if (pid_ == 0) {
    release_others_after_fork(keep, keep_mapping);  // closes sv[0], the loader's end, too
    unregister_fd(sv[1]);  // the zygote's own end: its workers close it and must not count it theirs
    zygote_main(sv[1], loader, worker_main, live);
  }
  OwnedLock lock;
  unregister_fd(sv[1]);
  close(sv[1]);
  sock_ = sv[0];
  pidfd_ = pidfd_open(pid_);  // our unreaped child: its pid cannot have been reused
  register_fd(pidfd_);
}

Zygote::~Zygote() {
  // Best effort: if the zygote is already gone, this fails and the wait below returns at once.
  const std::uint32_t stop = kStopWord;
  [[maybe_unused]] ssize_t n = send(sock_, &stop, sizeof stop, MSG_NOSIGNAL | MSG_DONTWAIT);
  if (pidfd_ >= 0) {
    pollfd p{pidfd_, POLLIN, 0};
    while (poll(&p, 1, kStopWaitMs) < 0 && errno == EINTR) {
    }
    if (!(p.revents & POLLIN)) {
      // Stopped or stuck: kill it; its workers die with it (PR_SET_PDEATHSIG).
      syscall(SYS_pidfd_send_signal, pidfd_, SIGKILL, nullptr, 0);
      while (poll(&p, 1, -1) < 0 && errno == EINTR) {
      }
    }
    // Reap it; ECHILD if a host that ignores SIGCHLD had the kernel do it.
    siginfo_t info;
    waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG);
  } else {
    // No pidfd (kernels before 5.3): poll the wait status for the same time,
    // then kill. Our unreaped child, so its pid cannot have been reused.
    int waited_ms = 0;
    pid_t done;
    while ((done = waitpid(pid_, nullptr, WNOHANG)) == 0 && waited_ms < kStopWaitMs) {
      usleep(5000);
      waited_ms += 5;
    }
    if (done == 0) {
      ::kill(pid_, SIGKILL);
      while (waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
      }
    }
  }
  OwnedLock lock;
  unregister_fd(sock_);
  unregister_fd(pidfd_);
  close(sock_);
  if (pidfd_ >= 0) close(pidfd_);
}

void Zygote::fail_gone() const {
  throw Error("the worker zygote (pid " + std::to_string(pid_) + ") died");
}

std::optional<ZygoteEvent> Zygote::receive(int timeout_ms) {
  ZygoteEvent e{};
  for (;;) {
    if (timeout_ms != 0) {
      pollfd p{sock_, POLLIN, 0};
      const int ready = poll(&p, 1, timeout_ms);
      if (ready < 0 && errno == EINTR) continue;
      if (ready == 0) {
        throw Error("the worker zygote (pid " + std::to_string(pid_) + ") did not answer within " +
                    std::to_string(timeout_ms / 1000) + " s: it is stopped or stuck");
      }
    }
    ssize_t n = recv(sock_, &e, sizeof e, MSG_DONTWAIT);
    if (n == sizeof e) return e;
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && timeout_ms == 0) return std::nullopt;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) continue;
    fail_gone();
  }
}

void Zygote::request(std::uint32_t word) {
  while (send(sock_, &word, sizeof word, MSG_NOSIGNAL) < 0) {
    if (errno != EINTR) fail_gone();
  }
}

void Zygote::kill_worker(std::uint32_t id) { request(id | kKillFlag); }

pid_t Zygote::spawn(std::uint32_t id) {
  request_spawn(id);
  return await_spawn(id);
}

void Zygote::request_spawn(std::uint32_t id) { request(id); }

pid_t Zygote::await_spawn(std::uint32_t id) {
  for (;;) {
    ZygoteEvent e = *receive(kAnswerWaitMs);
    if (e.kind == ZygoteEvent::exited) {
      pending_exits_.push_back(e);
      continue;
    }
    // Answers come in request order, and every request is awaited: another
    // worker's answer here means the protocol broke, never an answer to drop.
    if (e.worker != id) {
      throw Error("the worker zygote (pid " + std::to_string(pid_) + ") answered for worker " +
                  std::to_string(e.worker) + " while worker " + std::to_string(id) + "'s answer was awaited");
    }
    return e.pid > 0 ? e.pid : -e.status;
  }
}

bool Zygote::exit_pending() const { return !pending_exits_.empty(); }

std::optional<ZygoteEvent> Zygote::poll_exit() {
  if (!pending_exits_.empty()) {
    ZygoteEvent e = pending_exits_.front();
    pending_exits_.pop_front();
    return e;
  }
  return receive(0);
}

}  // namespace sluice::detail
