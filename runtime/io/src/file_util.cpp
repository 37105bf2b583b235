#include "file_util.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "sluice/error.h"

namespace sluice::io::detail {

Fd open_read(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error("cannot open " + path + ": " + std::strerror(errno));
  return Fd(fd);
}

std::uint64_t file_size(int fd, const std::string& path) {
  struct stat st;
  if (::fstat(fd, &st) != 0) throw Error("cannot stat " + path + ": " + std::strerror(errno));
  return static_cast<std::uint64_t>(st.st_size);
}

std::size_t pread_full(int fd, std::span<std::byte> out, std::uint64_t offset,
                       const std::string& path) {
  std::size_t got = 0;
  while (got < out.size()) {
    ssize_t n = ::pread(fd, out.data() + got, out.size() - got, static_cast<off_t>(offset + got));
    if (n < 0) {
      if (errno == EINTR) continue;
      throw Error(at_offset(path, offset + got, std::string("read failed: ") + std::strerror(errno)));
    }
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  return got;
}

std::string at_offset(const std::string& path, std::uint64_t offset, const std::string& what) {
  return path + ": byte offset " + std::to_string(offset) + ": " + what;
}

}  // namespace sluice::io::detail
