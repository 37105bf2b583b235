// Files replaced whole: PATH.tmpPID.N written, renamed over PATH (atomic_file.h).
#include "sluice/io/atomic_file.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>

#include "file_util.h"
#include "sluice/error.h"

namespace sluice::io {
namespace detail {

void remove_dead_writers(const std::string& stem) {
  const std::filesystem::path p(stem);
  const std::string dir = p.parent_path().empty() ? "." : p.parent_path().string();
  const std::string prefix = p.filename().string();
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
    std::size_t at = prefix.size();
    pid_t pid = 0;
    while (at < name.size() && name[at] >= '0' && name[at] <= '9' && pid < 100'000'000) pid = pid * 10 + (name[at++] - '0');
    if (at == prefix.size() || pid <= 0 || pid == ::getpid()) continue;
    if (::kill(pid, 0) == 0 || errno != ESRCH) continue;  // its writer may live (or is not ours to ask)
    struct stat st;
    if (::stat(it->path().c_str(), &st) != 0 || std::time(nullptr) - st.st_mtime < 60) continue;
    std::filesystem::remove(it->path(), ec);
    ec.clear();
  }
}

void write_atomically(const std::string& path, const std::function<void(std::ostream&)>& write, Durable durable) {
  remove_dead_writers(path + ".tmp");
  // PATH.tmpPID.N, N counting this process's writes: no other writer, of
  // this process or another, has the name while this one writes it.
  static std::atomic<std::uint64_t> made{0};
  const std::string tmp = path + ".tmp" + std::to_string(::getpid()) + "." +
                          std::to_string(made.fetch_add(1, std::memory_order_relaxed));
  auto fail = [&](const std::string& what, int err) {
    std::remove(tmp.c_str());
    throw Error("cannot write " + what + ": " + std::strerror(err));
  };
  {
    errno = 0;  // what a failed open, write or close leaves is theirs, not an earlier call's
    std::ofstream out(tmp, std::ios::trunc | std::ios::binary);
    if (!out) fail(tmp, errno != 0 ? errno : EIO);
    try {
      write(out);
    } catch (...) {
      out.close();
      std::remove(tmp.c_str());
      throw;
    }
    out.close();  // flushes: a full disk fails here
    if (!out) fail(tmp, errno != 0 ? errno : EIO);
  }
  if (durable == Durable::yes) {
    // fsync through a descriptor of its own: the stream gives none.
    const Fd fd(::open(tmp.c_str(), O_RDONLY | O_CLOEXEC));
    if (fd.get() < 0 || ::fsync(fd.get()) != 0) fail(tmp, errno);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) fail(path, errno);
  if (durable == Durable::yes) fsync_folder(path);
}

}  // namespace detail

bool is_atomic_temporary(std::string_view name, std::string_view of) {
  const std::string stem = std::string(of) + ".tmp";
  if (!name.starts_with(stem)) return false;
  for (const char c : name.substr(stem.size()))
    if ((c < '0' || c > '9') && c != '.') return false;
  return true;
}

void write_file_atomically(const std::string& path, std::string_view text) {
  detail::write_atomically(
      path, [&](std::ostream& out) { out.write(text.data(), static_cast<std::streamsize>(text.size())); },
      detail::Durable::yes);
}

}  // namespace sluice::io
