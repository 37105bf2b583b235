#include "test_support.h"

#include <chrono>
#include <csignal>
#include <exception>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>
#include <dirent.h>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

namespace sluice::test {

namespace {

std::vector<ProcessInfo> all_processes() {
  std::vector<ProcessInfo> out;
  DIR* d = opendir("/proc");
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    char* end = nullptr;
    long pid = std::strtol(e->d_name, &end, 10);
    if (*end != '\0' || pid <= 0) continue;
    std::ifstream f("/proc/" + std::string(e->d_name) + "/stat");
    std::string line;
    if (!std::getline(f, line)) continue;
    // The command name may hold spaces and parentheses: parse after the last ')'.
    auto close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 2));
    ProcessInfo p{static_cast<pid_t>(pid), 0, '?'};
    rest >> p.state >> p.ppid;
    out.push_back(p);
  }
  closedir(d);
  return out;
}

}  // namespace

std::vector<ProcessInfo> descendants(pid_t root) {
  std::vector<ProcessInfo> all = all_processes();
  std::multimap<pid_t, ProcessInfo> by_parent;
  for (const ProcessInfo& p : all) by_parent.emplace(p.ppid, p);
  std::vector<ProcessInfo> out;
  std::vector<pid_t> frontier{root};
  while (!frontier.empty()) {
    pid_t parent = frontier.back();
    frontier.pop_back();
    auto [lo, hi] = by_parent.equal_range(parent);
    for (auto it = lo; it != hi; ++it) {
      out.push_back(it->second);
      frontier.push_back(it->second.pid);
    }
  }
  return out;
}

std::set<std::string> dev_shm_entries() {
  std::set<std::string> out;
  DIR* d = opendir("/dev/shm");
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name != "." && name != "..") out.insert(name);
  }
  closedir(d);
  return out;
}

std::vector<ProcessInfo> wait_for_no_descendants(pid_t root, int timeout_ms) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    std::vector<ProcessInfo> left = descendants(root);
    if (left.empty() || std::chrono::steady_clock::now() > deadline) return left;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

bool proc_shows_emulator_signal_state() {
  struct sigaction old {};
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigaction(SIGUSR1, &dfl, &old);
  const pid_t child = fork();
  if (child == 0) {
    pause();
    _exit(0);
  }
  sigaction(SIGUSR1, &old, nullptr);
  if (child < 0) return false;
  // The child's dispositions are copied at fork: /proc shows them at once.
  unsigned long long caught = 0;
  std::ifstream status("/proc/" + std::to_string(child) + "/status");
  std::string key, value;
  while (status >> key >> value) {
    if (key == "SigCgt:") caught = std::stoull(value, nullptr, 16);
  }
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  return (caught & (1ULL << (SIGUSR1 - 1))) != 0;
}

std::string in_child(const std::function<std::string()>& body, int timeout_ms) {
  int fds[2];
  if (pipe(fds) != 0) return "pipe failed";
  const pid_t child = fork();
  if (child < 0) return "fork failed";
  if (child == 0) {
    close(fds[0]);
    std::string message;
    try {
      message = body();
    } catch (const std::exception& e) {
      message = std::string("exception: ") + e.what();
    }
    std::size_t off = 0;
    while (off < message.size()) {
      const ssize_t n = write(fds[1], message.data() + off, message.size() - off);
      if (n <= 0) break;
      off += static_cast<std::size_t>(n);
    }
    _exit(message.empty() ? 0 : 1);
  }
  close(fds[1]);
  std::string message;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  bool timed_out = false;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    char buf[4096];
    const ssize_t n = read(fds[0], buf, sizeof buf);
    if (n <= 0) break;  // EOF: the child has exited (or closed the pipe)
    message.append(buf, static_cast<std::size_t>(n));
  }
  close(fds[0]);
  if (timed_out) kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  if (timed_out) return "timed out after " + std::to_string(timeout_ms) + " ms" + (message.empty() ? "" : ": " + message);
  if (WIFSIGNALED(status)) return "the child was killed by signal " + std::to_string(WTERMSIG(status)) + " " + message;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return message.empty() ? "the child failed" : message;
  return "";
}

}  // namespace sluice::test
