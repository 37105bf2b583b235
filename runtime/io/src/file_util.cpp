#include "file_util.h"

#include <sys/mman.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <new>

#include "sluice/error.h"

namespace sluice::io::detail {

ScratchBuffer::ScratchBuffer(std::size_t size) {
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  size_ = std::max<std::size_t>(page, (size + page - 1) / page * page);
  void* p = ::mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  data_ = static_cast<std::byte*>(p);
#ifdef MADV_POPULATE_WRITE
  if (::madvise(p, size_, MADV_POPULATE_WRITE) == 0) return;
#endif
  for (std::size_t i = 0; i < size_; i += page) static_cast<volatile std::byte*>(p)[i] = std::byte{0};
}

ScratchBuffer::~ScratchBuffer() {
  if (data_) ::munmap(data_, size_);
}

ScratchBuffer& ScratchBuffer::operator=(ScratchBuffer&& o) noexcept {
  if (this != &o) {
    if (data_) ::munmap(data_, size_);
    data_ = o.data_;
    size_ = o.size_;
    o.data_ = nullptr;
    o.size_ = 0;
  }
  return *this;
}

Fd open_read(const std::string& path) {
  // O_NONBLOCK: a FIFO opens at once rather than waiting for a writer
  // forever, and is then refused below with anything else that is not a
  // regular file (a device such as /dev/zero, a directory, a socket). It
  // changes nothing for a regular file.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw Error("cannot open " + path + ": " + std::strerror(errno));
  Fd owned(fd);
  struct stat st;
  if (::fstat(fd, &st) != 0) throw Error("cannot stat " + path + ": " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) throw Error(path + ": " + not_regular(st) + ", not a file of data");
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return owned;
}

std::string not_regular(const struct stat& st) {
  if (S_ISDIR(st.st_mode)) return "a directory";
  if (S_ISFIFO(st.st_mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) return "a device";
  if (S_ISSOCK(st.st_mode)) return "a socket";
  return "not a regular file";
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

std::shared_ptr<const std::byte> map_read_only(int fd, std::size_t bytes, const std::string& path) {
  void* p = ::mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) throw Error("cannot map " + path + ": " + std::strerror(errno));
  return {static_cast<const std::byte*>(p),
          [bytes](const std::byte* m) { ::munmap(const_cast<std::byte*>(m), bytes); }};
}

std::string sidecar_path(const std::string& file, const std::string& dir, const std::string& suffix) {
  if (dir.empty()) return file + suffix;
  std::error_code ec;
  std::string absolute = std::filesystem::absolute(file, ec).lexically_normal().string();
  char hash[24];
  std::snprintf(hash, sizeof hash, "%016zx", std::hash<std::string>{}(absolute));
  return (std::filesystem::path(dir) / (std::filesystem::path(file).filename().string() + "." + hash + suffix))
      .string();
}

void fsync_folder(const std::string& path) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  const std::string folder = parent.empty() ? std::string(".") : parent.string();
  Fd fd(::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.get() < 0) throw Error("cannot open folder " + folder + ": " + std::strerror(errno));
  if (::fsync(fd.get()) != 0 && errno != EINVAL) throw Error("cannot fsync folder " + folder + ": " + std::strerror(errno));
}

bool not_older(const std::string& a, const std::string& b) {
  struct stat as, bs;
  if (::stat(a.c_str(), &as) != 0 || ::stat(b.c_str(), &bs) != 0) return false;
  if (as.st_mtim.tv_sec != bs.st_mtim.tv_sec) return as.st_mtim.tv_sec > bs.st_mtim.tv_sec;
  return as.st_mtim.tv_nsec >= bs.st_mtim.tv_nsec;
}

std::int64_t mtime_ns(const struct stat& st) {
  return static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

std::int64_t mtime_ns(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) throw Error("cannot stat " + path + ": " + std::strerror(errno));
  return mtime_ns(st);
}

std::string at_offset(const std::string& path, std::uint64_t offset, const std::string& what) {
  return path + ": byte offset " + std::to_string(offset) + ": " + what;
}

}  // namespace sluice::io::detail
