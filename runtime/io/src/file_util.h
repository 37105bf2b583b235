// Internal: file descriptors and whole reads, with errors naming the file.
//
// Thread safety: reentrant.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <span>
#include <string>

namespace sluice::io::detail {

// An owned file descriptor, closed on destruction.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() { reset(); }
  Fd(Fd&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      reset();
      fd_ = o.fd_;
      o.fd_ = -1;
    }
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

// Memory for reads to fill, its pages faulted in when allocated: one
// madvise(MADV_POPULATE_WRITE) call instead of a page fault per 4 KiB page on
// the first write (a fault costs ~20 us on some VMs, more than reading the
// page). Where the kernel lacks that advice, the constructor writes to each
// page instead. The contents start zeroed. Move-only.
class ScratchBuffer {
 public:
  ScratchBuffer() = default;
  explicit ScratchBuffer(std::size_t size);  // throws std::bad_alloc
  ~ScratchBuffer();
  ScratchBuffer(ScratchBuffer&& o) noexcept : data_(o.data_), size_(o.size_) {
    o.data_ = nullptr;
    o.size_ = 0;
  }
  ScratchBuffer& operator=(ScratchBuffer&& o) noexcept;
  ScratchBuffer(const ScratchBuffer&) = delete;
  ScratchBuffer& operator=(const ScratchBuffer&) = delete;

  std::byte* data() const { return data_; }
  std::size_t size() const { return size_; }  // at least the size asked for

 private:
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};

// Opens `path` read-only; throws sluice::Error "cannot open PATH: reason".
Fd open_read(const std::string& path);
// What a file that is not a regular one is, for messages ("a FIFO (named pipe)").
std::string not_regular(const struct stat& st);

std::uint64_t file_size(int fd, const std::string& path);

// Reads up to out.size() bytes at `offset`, retrying short reads; returns the
// count read (less only at end of file). Throws sluice::Error on an I/O error.
std::size_t pread_full(int fd, std::span<std::byte> out, std::uint64_t offset,
                       const std::string& path);

// Maps `bytes` (> 0) of `fd` read-only and shared; unmapped when the last
// owner lets go. Throws sluice::Error "cannot map PATH: reason".
std::shared_ptr<const std::byte> map_read_only(int fd, std::size_t bytes, const std::string& path);

// A file kept beside `file`: FILE + suffix, or with a `dir`,
// dir/BASENAME.<hash of FILE's absolute path> + suffix (TFRecord and JSON
// lines indexes, decompressed copies).
std::string sidecar_path(const std::string& file, const std::string& dir, const std::string& suffix);

// Removes what writers that died left under `stem` + PID... (a kill -9 mid
// write): files whose PID is no process here and that nothing wrote for a
// minute (a writer alive in another PID namespace keeps its file fresh).
void remove_dead_writers(const std::string& stem);

// Writes `path` through `write` into PATH.tmpPID, then renames it over `path`,
// so readers see the old file or the whole new one (atomic_file.h). Throws
// sluice::Error "cannot write PATH: reason" (the temp file is removed).
// Durable::yes flushes the file and then its folder to the disk, for what
// users keep (a manifest, a state); caches (indexes, decompressed copies)
// are made again when a crash loses them.
enum class Durable { no, yes };
void write_atomically(const std::string& path, const std::function<void(std::ostream&)>& write,
                      Durable durable = Durable::no);

// fsyncs the folder that holds `path` (after a rename into it). Throws
// sluice::Error naming the folder.
void fsync_folder(const std::string& path);

// True when `a` was modified no earlier than `b` (both exist).
bool not_older(const std::string& a, const std::string& b);

// A file's modification time in nanoseconds since the epoch; from a path
// (throws sluice::Error naming it) or from its stat.
std::int64_t mtime_ns(const struct stat& st);
std::int64_t mtime_ns(const std::string& path);

// "PATH: byte offset N: what".
std::string at_offset(const std::string& path, std::uint64_t offset, const std::string& what);

}  // namespace sluice::io::detail
