#include "zygote.h"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

#include "sluice/error.h"

namespace sluice::detail {

std::string describe_wait_status(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    const char* name = strsignal(sig);
    return "killed by signal " + std::to_string(sig) + " (" + (name ? name : "?") + ")";
  }
  return "stopped (wait status " + std::to_string(status) + ")";
}

namespace {

// Makes this process die with the thread that forked it. Returns false if that
// parent is already gone.
bool die_with_parent(pid_t expected_parent) {
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) return false;
  return getppid() == expected_parent;
}

// A worker starts with default signal dispositions, whatever handlers the host
// installed (a test framework's or a crash reporter's handler must not run in
// a worker: a crash there is reported by the zygote). SIGINT stays ignored:
// Ctrl-C reaches the whole process group and the loader decides what it means.
void reset_signal_handlers() {
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig == SIGKILL || sig == SIGSTOP || sig == SIGINT) continue;
    signal(sig, SIG_DFL);
  }
}

void send_event(int sock, const ZygoteEvent& e) {
  // MSG_NOSIGNAL: if the loader is gone, this fails instead of raising SIGPIPE.
  while (send(sock, &e, sizeof e, MSG_NOSIGNAL) < 0 && errno == EINTR) {
  }
}

// The zygote's whole life. Uses only fork, waitpid, kill and socket calls on
// memory allocated before the fork, so it is safe even when the process it was
// forked from had other threads.
[[noreturn]] void zygote_main(int sock, pid_t loader, const std::function<void(std::uint32_t)>& worker_main,
                              std::vector<pid_t>& live) {
  if (!die_with_parent(loader)) _exit(1);
  // Ctrl-C reaches the whole process group; the loader decides what it means.
  signal(SIGINT, SIG_IGN);
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  sigprocmask(SIG_BLOCK, &chld, nullptr);
  int sfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sfd < 0) _exit(1);
  const pid_t self = getpid();

  for (;;) {
    pollfd fds[2] = {{sock, POLLIN, 0}, {sfd, POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
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
      std::uint32_t id = 0;
      ssize_t n = recv(sock, &id, sizeof id, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n != sizeof id) break;  // EOF: the loader is done with us
      if (id & kKillFlag) {
        id &= ~kKillFlag;
        if (id < live.size() && live[id] > 0) kill(live[id], SIGKILL);
        continue;
      }
      if (id >= live.size()) break;
      pid_t pid = fork();
      if (pid == 0) {
        close(sfd);
        reset_signal_handlers();
        sigprocmask(SIG_UNBLOCK, &chld, nullptr);
        if (!die_with_parent(self)) _exit(1);
        close(sock);
        worker_main(id);
        _exit(0);
      }
      if (pid > 0) live[id] = pid;
      send_event(sock, {ZygoteEvent::spawned, id, pid, pid > 0 ? 0 : errno});
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

Zygote::Zygote(std::function<void(std::uint32_t)> worker_main, std::uint32_t max_workers) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
    throw Error(std::string("socketpair failed: ") + std::strerror(errno));
  }
  std::vector<pid_t> live(max_workers, 0);  // allocated before the fork
  const pid_t loader = getpid();
  pid_ = fork();
  if (pid_ < 0) {
    int err = errno;
    close(sv[0]);
    close(sv[1]);
    throw Error(std::string("fork of the worker zygote failed: ") + std::strerror(err));
  }
  if (pid_ == 0) {
    close(sv[0]);
    zygote_main(sv[1], loader, worker_main, live);
  }
  close(sv[1]);
  sock_ = sv[0];
}

Zygote::~Zygote() {
  if (sock_ >= 0) close(sock_);
  if (pid_ > 0) {
    while (waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
}

std::optional<ZygoteEvent> Zygote::receive(bool block) {
  ZygoteEvent e{};
  for (;;) {
    ssize_t n = recv(sock_, &e, sizeof e, block ? 0 : MSG_DONTWAIT);
    if (n == sizeof e) return e;
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return std::nullopt;
    throw Error("the worker zygote (pid " + std::to_string(pid_) + ") died");
  }
}

void Zygote::request(std::uint32_t word) {
  while (send(sock_, &word, sizeof word, MSG_NOSIGNAL) < 0) {
    if (errno != EINTR) throw Error("the worker zygote (pid " + std::to_string(pid_) + ") died");
  }
}

void Zygote::kill_worker(std::uint32_t id) { request(id | kKillFlag); }

pid_t Zygote::spawn(std::uint32_t id) {
  request(id);
  for (;;) {
    ZygoteEvent e = *receive(true);
    if (e.kind == ZygoteEvent::exited) {
      pending_exits_.push_back(e);
      continue;
    }
    if (e.worker != id) continue;
    if (e.pid <= 0) throw Error("fork of worker " + std::to_string(id) + " failed: " + std::strerror(e.status));
    return e.pid;
  }
}

std::optional<ZygoteEvent> Zygote::poll_exit() {
  if (!pending_exits_.empty()) {
    ZygoteEvent e = pending_exits_.front();
    pending_exits_.pop_front();
    return e;
  }
  return receive(false);
}

}  // namespace sluice::detail
