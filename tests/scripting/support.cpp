#include "support.h"

#include <catch2/catch.hpp>

#include "skip.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace sluice::test {

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string templ = std::string(base && *base ? base : "/tmp") + "/sluice-script-test-XXXXXX";
  if (::mkdtemp(templ.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = templ;
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

std::string TempDir::write(const std::string& name, const std::string& content) const {
  const std::string full = path_ + "/" + name;
  std::filesystem::create_directories(std::filesystem::path(full).parent_path());
  std::ofstream file(full, std::ios::binary);
  file << content;
  if (!file) throw std::runtime_error("cannot write " + full);
  return full;
}

std::vector<pid_t> descendants() {
  std::map<pid_t, pid_t> parent;
  if (DIR* proc = ::opendir("/proc")) {
    while (dirent* entry = ::readdir(proc)) {
      const pid_t pid = static_cast<pid_t>(std::atoi(entry->d_name));
      if (pid <= 0) continue;
      std::ifstream stat("/proc/" + std::string(entry->d_name) + "/stat");
      std::string line;
      if (!std::getline(stat, line)) continue;
      const auto close = line.rfind(')');
      if (close == std::string::npos) continue;
      char state = 0;
      int ppid = 0;
      if (std::sscanf(line.c_str() + close + 1, " %c %d", &state, &ppid) == 2) parent[pid] = ppid;
    }
    ::closedir(proc);
  }
  std::vector<pid_t> found;
  std::vector<pid_t> frontier{::getpid()};
  while (!frontier.empty()) {
    const pid_t p = frontier.back();
    frontier.pop_back();
    for (const auto& [pid, ppid] : parent) {
      if (ppid == p) {
        found.push_back(pid);
        frontier.push_back(pid);
      }
    }
  }
  return found;
}

std::vector<pid_t> wait_for_no_descendants(int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    while (::waitpid(-1, nullptr, WNOHANG) > 0) {
    }
    std::vector<pid_t> left = descendants();
    if (left.empty() || std::chrono::steady_clock::now() > deadline) return left;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

namespace {

// Reads both pipes to their ends without either filling up.
void read_both(int out_fd, int err_fd, std::string& out, std::string& err) {
  pollfd fds[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
  std::string* sinks[2] = {&out, &err};
  int open = 2;
  while (open > 0) {
    if (::poll(fds, 2, -1) < 0) continue;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      char buffer[4096];
      const ssize_t n = ::read(fds[i].fd, buffer, sizeof buffer);
      if (n > 0) {
        sinks[i]->append(buffer, static_cast<std::size_t>(n));
      } else {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open;
      }
    }
  }
}

}  // namespace

CliResult run_cli(const std::vector<std::string>& args) {
#ifndef SLUICE_CLI
  (void)args;
  throw std::runtime_error("the sluice executable was not built");
#else
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0) {
    throw std::runtime_error("pipe failed");
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], STDERR_FILENO);
  std::vector<std::string> all{SLUICE_CLI};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int rc = ::posix_spawn(&pid, SLUICE_CLI, &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  if (rc != 0) throw std::runtime_error("posix_spawn failed");
  CliResult result;
  read_both(out_pipe[0], err_pipe[0], result.out, result.err);
  int status = 0;
  ::waitpid(pid, &status, 0);
  result.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
#endif
}

std::vector<std::string> read_lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

std::vector<std::vector<std::uint64_t>> record_samples(const std::string& path) {
  std::vector<std::vector<std::uint64_t>> out;
  const auto all = read_lines(path);
  for (std::size_t i = 1; i < all.size(); ++i) {
    const std::string& l = all[i];
    const auto at = l.find("\"samples\":[");
    if (at == std::string::npos) continue;  // a skip line
    const auto start = at + 11;
    std::vector<std::uint64_t> ids;
    std::stringstream ss(l.substr(start, l.find(']', start) - start));
    for (std::string id; std::getline(ss, id, ',');) ids.push_back(std::stoull(id));
    out.push_back(ids);
  }
  return out;
}

std::string shared_data() {
#ifdef SLUICE_SHARED_DATA
  const std::filesystem::path path = SLUICE_SHARED_DATA;
  if (std::filesystem::is_directory(path)) return std::filesystem::canonical(path).string();
  exit_if_skip_code(path.string() + " is absent (the real-data fixtures)");
  WARN("skipped: " << path.string() << " is absent (the real-data fixtures)");
#endif
  return "";
}

std::string pillow_folder(const TempDir& dir, const ImageClasses& classes) {
  namespace fs = std::filesystem;
  const std::string data = shared_data();
  if (data.empty()) return "";
  const fs::path images = fs::path(data) / "images/pillow-tests";
  const fs::path train = fs::path(dir.path()) / "train";
  for (const auto& [name, files] : classes) {
    fs::create_directories(train / name);
    for (const std::string& file : files) {
      const fs::path to = train / name / file;
      fs::create_directories(to.parent_path());
      fs::copy_file(images / fs::path(file).filename(), to);
    }
  }
  return train.string();
}

BatchCopy copy_batch(const Batch& batch) {
  BatchCopy copy;
  copy.epoch = batch.epoch();
  copy.index = batch.index();
  copy.samples.assign(batch.sample_ids().begin(), batch.sample_ids().end());
  for (std::size_t f = 0; f < batch.field_count(); ++f) {
    const FieldView view = batch.field(f);
    const auto* bytes = static_cast<const unsigned char*>(view.data);
    copy.fields.emplace_back(bytes, bytes + view.nbytes);
  }
  return copy;
}

std::vector<BatchCopy> drain(Loader& loader) {
  std::vector<BatchCopy> batches;
  while (auto batch = loader.next()) batches.push_back(copy_batch(*batch));
  return batches;
}

}  // namespace sluice::test
