// The load's trial in a child first (see trial_child.h for the contract).
#include "trial_child.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio_ext.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "child_signals.h"
#include "owned_resources.h"
#include "sluice/error.h"
#include "supervisor.h"
#include "zygote.h"

namespace sluice::scripting {
namespace {

// What the child printed that an error shows: its last bytes.
constexpr std::size_t kOutputShown = 2048;

void write_all(int fd, const char* data, std::size_t n) noexcept {
  while (n > 0) {
    const ssize_t w = ::write(fd, data, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    data += w;
    n -= static_cast<std::size_t>(w);
  }
}

// Async-signal-safe from here on but for fn: the child of a fork in a
// process whose other threads may hold any lock.
[[noreturn]] void child(int report_fd, int output_fd, pid_t parent, const std::function<void(int)>& fn) {
  detail::reset_child_signals();  // first: the host's handlers must not run here
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(0);  // the parent died before prctl
  const std::array<int, 2> keep{report_fd, output_fd};
  detail::release_others_after_fork(keep, nullptr);  // other Loaders' sockets and arenas
  // What the host had buffered but not written is the host's, not this
  // child's output: dropped here (the host writes it itself).
  __fpurge(stdout);
  __fpurge(stderr);
  ::dup2(output_fd, STDOUT_FILENO);  // both above 2 (run_trial_in_child), so neither is replaced
  ::dup2(output_fd, STDERR_FILENO);
  std::setvbuf(stdout, nullptr, _IONBF, 0);  // a crash loses nothing printed before it
  try {
    fn(report_fd);
  } catch (...) {
    // A clean error: the launching process meets it again, and says it.
  }
  write_all(report_fd, "done\n", 5);
  _exit(0);
}

// How the child ended, as the workers' deaths are told (describe_wait_status).
std::string wait_text(int status) {
  const std::string how = detail::describe_wait_status(status);
  if (WIFEXITED(status)) return how + " (os.exit?)";
  return WIFSIGNALED(status) ? "was " + how : how;
}

// The last kOutputShown bytes the child wrote to `fd` (a memfd), or "".
std::string output_tail(int fd) {
  struct stat st{};
  if (::fstat(fd, &st) != 0 || st.st_size <= 0) return "";
  const auto size = static_cast<std::size_t>(st.st_size);
  const std::size_t from = size > kOutputShown ? size - kOutputShown : 0;
  std::string text(size - from, '\0');
  const ssize_t n = ::pread(fd, text.data(), text.size(), static_cast<off_t>(from));
  text.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text.empty() ? "" : std::string("; its last output") + (from > 0 ? " (the end of it)" : "") + ":\n" + text;
}

// A descriptor above 2, so that the child's dup2 onto stdout and stderr
// never replaces it (a host may have closed its stdio).
int above_stdio(int fd) {
  if (fd > STDERR_FILENO) return fd;
  const int moved = ::fcntl(fd, F_DUPFD_CLOEXEC, STDERR_FILENO + 1);
  ::close(fd);
  return moved;
}

// The parent's descriptors, registered as owned (owned_resources.h) so that
// a zygote another thread forks meanwhile does not keep them; closed and
// unregistered however the trial ends.
struct Fds {
  int read = -1, write = -1, output = -1;
  Fds() {
    detail::OwnedLock lock;
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0)
      throw Error(std::string("cannot make a pipe for the trial run: ") + std::strerror(errno));
    read = above_stdio(p[0]);
    write = above_stdio(p[1]);
    output = above_stdio(static_cast<int>(::memfd_create("sluice-trial-output", MFD_CLOEXEC)));
    for (const int fd : {read, write, output})
      if (fd >= 0) detail::register_fd(fd);
    if (read < 0 || write < 0 || output < 0) {
      const int e = errno;
      close_all();
      throw Error(std::string("cannot make the trial run's descriptors: ") + std::strerror(e));
    }
    ::fcntl(read, F_SETFL, O_NONBLOCK);
  }
  ~Fds() {
    detail::OwnedLock lock;
    close_all();
  }
  void close_write() {
    detail::OwnedLock lock;
    close_one(write);
  }
  void close_all() {
    close_one(read);
    close_one(write);
    close_one(output);
  }
  static void close_one(int& fd) {
    if (fd < 0) return;
    detail::unregister_fd(fd);
    ::close(fd);
    fd = -1;
  }
};

// The child, killed and reaped if the parent's side ends early (an
// exception): no process outlives the trial.
struct Reaper {
  pid_t pid;
  bool reaped = false;
  int status = 0;
  bool lost = false;  // the status: SIGCHLD ignored, or another waiter took it
  // waitpid, blocking or not; true once the child is gone.
  bool reap(bool block) {
    if (reaped) return true;
    for (;;) {
      const pid_t got = ::waitpid(pid, &status, block ? 0 : WNOHANG);
      if (got == pid) return reaped = true;
      if (got == 0) return false;
      if (errno == EINTR) continue;
      lost = true;  // ECHILD: the kernel or the host reaped it
      return reaped = true;
    }
  }
  ~Reaper() {
    if (reaped) return;
    ::kill(pid, SIGKILL);
    reap(true);
  }
};

}  // namespace

void report_sample(int report_fd, std::uint64_t index) noexcept {
  char text[24];
  char* end = std::to_chars(text, text + sizeof text - 1, index).ptr;  // 20 digits at most
  *end++ = '\n';
  write_all(report_fd, text, static_cast<std::size_t>(end - text));
}

void report_line(int report_fd, std::string_view line) noexcept {
  write_all(report_fd, "=", 1);  // a line, not a sample's index
  write_all(report_fd, line.data(), std::min(line.size(), line.find('\n')));
  write_all(report_fd, "\n", 1);
}

TrialOutcome run_trial_in_child(const std::function<void(int report_fd)>& fn, std::uint32_t timeout_ms) {
  Fds fds;
  const pid_t parent = getpid();
  // Signals blocked across the fork, as for the zygote: none reaches the
  // child before reset_child_signals() (the host's handler would run there).
  sigset_t all, was;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &was);
  const pid_t pid = fork();
  if (pid == 0) child(fds.write, fds.output, parent, fn);
  const int fork_errno = errno;
  pthread_sigmask(SIG_SETMASK, &was, nullptr);
  if (pid < 0) throw Error(std::string("cannot fork the trial run's process: ") + std::strerror(fork_errno));
  Reaper child_process{pid};
  fds.close_write();

  // The clock: until the first sample begins, at least the workers' start-up
  // allowance (the fork, the record feed); then batch_timeout_ms from each
  // sample begun.
  using Clock = std::chrono::steady_clock;
  auto deadline = Clock::now() + std::chrono::milliseconds(
                                std::max<std::uint64_t>(timeout_ms, detail::kStartAllowanceMs));
  TrialOutcome out;
  std::string lines;
  bool timed_out = false;
  // Lines the child wrote: sample indexes and report_line's ("=TEXT"), then "done".
  auto take_lines = [&] {
    char buf[256];
    for (;;) {
      const ssize_t n = ::read(fds.read, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;  // EAGAIN: nothing more now; 0: every writer closed it
      lines.append(buf, static_cast<std::size_t>(n));
      for (std::size_t nl; (nl = lines.find('\n')) != std::string::npos; lines.erase(0, nl + 1)) {
        if (lines.compare(0, nl, "done") == 0) {
          out.finished = true;
          continue;
        }
        if (lines[0] == '=') {
          out.lines.push_back(lines.substr(1, nl - 1));
          continue;
        }
        std::uint64_t index = 0;
        for (std::size_t i = 0; i < nl && lines[i] >= '0' && lines[i] <= '9'; ++i)
          index = index * 10 + static_cast<std::uint64_t>(lines[i] - '0');
        out.sample = index;
        if (timeout_ms != 0) deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
      }
    }
  };
  // Until the child is gone (its exit seen by waitpid, not by the pipe's
  // end, which a process forked meanwhile may hold), or past the deadline.
  while (!child_process.reap(false)) {
    int wait_ms = 50;
    if (timeout_ms != 0) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0) {
        take_lines();
        if (out.finished) {  // "done" came just now: the child is exiting
          ::poll(nullptr, 0, 1);
          continue;
        }
        timed_out = true;
        ::kill(pid, SIGKILL);
        child_process.reap(true);
        break;
      }
      wait_ms = static_cast<int>(std::min<long long>(left, wait_ms));
    }
    pollfd p{fds.read, POLLIN, 0};
    if (::poll(&p, 1, wait_ms) > 0) take_lines();
  }
  take_lines();  // what the child wrote before it ended
  if (out.finished) return out;
  if (timed_out) {
    out.ended = "ran past " + std::to_string(timeout_ms) + " ms (batch_timeout_ms) and was killed";
  } else if (child_process.lost) {
    out.ended = "ended (its exit status is lost: this process ignores SIGCHLD or reaps its children itself)";
  } else {
    out.ended = wait_text(child_process.status);
  }
  out.ended += output_tail(fds.output);
  return out;
}

}  // namespace sluice::scripting
