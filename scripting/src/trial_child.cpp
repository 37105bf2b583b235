// The load's trial in a child first (see trial_child.h for the contract).
#include "trial_child.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "child_signals.h"
#include "sluice/error.h"

namespace sluice::scripting {
namespace {

void write_all(int fd, const char* data, std::size_t n) noexcept {
  while (n > 0) {
    const ssize_t w = ::write(fd, data, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    data += w;
    n -= static_cast<std::size_t>(w);
  }
}

[[noreturn]] void child(int report_fd, pid_t parent, const std::function<void(int)>& fn) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(0);  // the parent died before prctl
  detail::reset_child_signals();  // as a worker's: the host's handlers must not run here
  const int null = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (null >= 0) {
    ::dup2(null, STDOUT_FILENO);
    ::dup2(null, STDERR_FILENO);
    ::close(null);
  }
  try {
    fn(report_fd);
  } catch (...) {
    // A clean error: the launching process meets it again, and says it.
  }
  write_all(report_fd, "done\n", 5);
  _exit(0);
}

std::string wait_text(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status)) + " (os.exit?)";
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    const char* name = strsignal(sig);
    return "was killed by signal " + std::to_string(sig) + " (" + (name ? name : "?") + ")";
  }
  return "ended (wait status " + std::to_string(status) + ")";
}

}  // namespace

void report_sample(int report_fd, std::uint64_t index) noexcept {
  char text[24];
  std::size_t n = 0;
  char digits[20];
  do {
    digits[n++] = static_cast<char>('0' + index % 10);
    index /= 10;
  } while (index != 0);
  for (std::size_t i = 0; i < n; ++i) text[i] = digits[n - 1 - i];
  text[n] = '\n';
  write_all(report_fd, text, n + 1);
}

TrialOutcome run_trial_in_child(const std::function<void(int report_fd)>& fn, std::uint32_t timeout_ms) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw Error(std::string("cannot make a pipe for the trial run: ") + std::strerror(errno));
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    const int e = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    throw Error(std::string("cannot fork the trial run's process: ") + std::strerror(e));
  }
  if (pid == 0) {
    ::close(fds[0]);
    child(fds[1], parent, fn);
  }
  ::close(fds[1]);

  TrialOutcome out;
  std::string lines;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  bool timed_out = false;
  for (;;) {
    int wait_ms = -1;
    if (timeout_ms != 0) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        timed_out = true;
        break;
      }
      wait_ms = static_cast<int>(std::min<long long>(left.count(), 1000 * 1000));
    }
    pollfd p{fds[0], POLLIN, 0};
    const int ready = ::poll(&p, 1, wait_ms);
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) continue;  // the deadline is checked above
    char buf[256];
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // the child's end closed: it ended
    lines.append(buf, static_cast<std::size_t>(n));
    for (std::size_t nl; (nl = lines.find('\n')) != std::string::npos; lines.erase(0, nl + 1)) {
      const std::string line = lines.substr(0, nl);
      if (line == "done") {
        out.finished = true;
      } else if (!line.empty()) {
        out.sample = std::stoull(line);
      }
    }
  }
  ::close(fds[0]);
  if (timed_out) ::kill(pid, SIGKILL);
  int status = 0;
  pid_t got;
  while ((got = ::waitpid(pid, &status, 0)) < 0 && errno == EINTR) {
  }
  if (out.finished) return out;
  if (timed_out) {
    out.ended = "ran past " + std::to_string(timeout_ms) + " ms (batch_timeout_ms) and was killed";
  } else if (got == pid) {
    out.ended = wait_text(status);
  } else {
    out.ended = "ended (its exit status is lost: this process ignores SIGCHLD or reaps its children itself)";
  }
  return out;
}

}  // namespace sluice::scripting
