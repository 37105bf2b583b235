// memfd_file.h: fuzz input as a file, for readers that take a path. The bytes
// go into an anonymous memfd, named by its /proc/self/fd path; nothing touches
// the disk and nothing is left behind.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

class MemfdFile {
 public:
  MemfdFile(const void* data, std::size_t size) : fd_(memfd_create("sluice-fuzz", MFD_CLOEXEC)) {
    const auto* p = static_cast<const std::uint8_t*>(data);
    while (size > 0) {
      ssize_t n = write(fd_, p, size);
      if (n <= 0) break;
      p += n;
      size -= static_cast<std::size_t>(n);
    }
  }
  ~MemfdFile() { close(fd_); }
  MemfdFile(const MemfdFile&) = delete;
  MemfdFile& operator=(const MemfdFile&) = delete;
  std::string path() const { return "/proc/self/fd/" + std::to_string(fd_); }

 private:
  int fd_;
};
