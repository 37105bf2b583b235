#include "pytorch_baseline.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "pytorch_script.h"

extern char** environ;

namespace sluice::bench {
namespace {

std::string python_path() {
  const char* configured = std::getenv("SLUICE_BENCH_PYTHON");
  return configured && *configured ? configured : "/usr/bin/python3";
}

// Runs argv with stdout and stderr both written to the returned string.
// Sets *status to the wait status; throws nothing, reports spawn failure in *spawn_error.
std::string run_captured(const std::vector<std::string>& argv, int* status, int* spawn_error) {
  std::vector<char*> pointers;
  for (const std::string& arg : argv) pointers.push_back(const_cast<char*>(arg.c_str()));
  pointers.push_back(nullptr);

  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) {
    *spawn_error = errno;
    return {};
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDERR_FILENO);
  pid_t pid = 0;
  *spawn_error = posix_spawnp(&pid, pointers[0], &actions, nullptr, pointers.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(pipe_fds[1]);

  std::string output;
  if (*spawn_error == 0) {
    char buffer[4096];
    for (;;) {
      const ssize_t n = read(pipe_fds[0], buffer, sizeof buffer);
      if (n > 0) {
        output.append(buffer, static_cast<std::size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        break;
      }
    }
    while (waitpid(pid, status, 0) < 0 && errno == EINTR) {
    }
  }
  close(pipe_fds[0]);
  return output;
}

std::string last_line(const std::string& output) {
  std::istringstream lines(output);
  std::string line, last;
  while (std::getline(lines, line)) {
    if (!line.empty()) last = line;
  }
  return last.empty() ? "no output" : last;
}

}  // namespace

PyTorchBaseline pytorch_skipped(std::string note) { return {std::nullopt, std::move(note)}; }

PyTorchBaseline run_pytorch_baseline(const std::vector<std::string>& args) {
  const std::string python = python_path();
  std::vector<std::string> argv = {python, "-c", kPyTorchBaselineScript};
  argv.insert(argv.end(), args.begin(), args.end());

  int status = 0;
  int spawn_error = 0;
  const std::string output = run_captured(argv, &status, &spawn_error);
  if (spawn_error != 0) {
    return pytorch_skipped("cannot run " + python + ": " + std::strerror(spawn_error));
  }

  std::vector<double> rates;
  std::istringstream lines(output);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("SKIP ", 0) == 0) return pytorch_skipped(line.substr(5));
    if (line.rfind("RUN ", 0) == 0) rates.push_back(std::strtod(line.c_str() + 4, nullptr));
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    const std::string how = WIFEXITED(status) ? "exit status " + std::to_string(WEXITSTATUS(status))
                                              : "signal " + std::to_string(WTERMSIG(status));
    return pytorch_skipped("the PyTorch baseline failed (" + how + "): " + last_line(output));
  }
  if (rates.empty()) return pytorch_skipped("the PyTorch baseline printed no result: " + last_line(output));
  return {std::move(rates), ""};
}

}  // namespace sluice::bench
