#include "output_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "sluice/error.h"

// Header-only xxHash: no library to link (as in the cross build, see
// runtime/CMakeLists.txt), the same XXH3.
#define XXH_INLINE_ALL
#include <xxhash.h>

namespace sluice::io::detail {
namespace {

constexpr std::size_t kBuffer = 1 << 20;
constexpr std::size_t kDirect = 64 << 10;  // writes from this size on skip the buffer
// Every kWriteback bytes, the kernel is asked to start writing them to disk
// (sync_file_range, SYNC_FILE_RANGE_WRITE: it does not wait), so that the
// fsync in finish() waits for the last stretch only, not for the whole file:
// the disk works while the samples are made.
constexpr std::uint64_t kWriteback = 8 << 20;

[[noreturn]] void fail(const std::string& what, const std::string& path, int err) {
  throw Error(what + " " + path + ": " + std::strerror(err));
}

}  // namespace

struct Checksum::State {
  XXH3_state_t xxh;
};

Checksum::Checksum() : state_(std::make_unique<State>()) { XXH3_64bits_reset(&state_->xxh); }
Checksum::~Checksum() = default;

void Checksum::update(std::span<const std::byte> bytes) {
  XXH3_64bits_update(&state_->xxh, bytes.data(), bytes.size());
}

std::string Checksum::text() const {
  char hex[32];
  std::snprintf(hex, sizeof hex, "xxh3:%016llx",
                static_cast<unsigned long long>(XXH3_64bits_digest(&state_->xxh)));
  return hex;
}

std::string file_checksum(const std::string& path) {
  Fd fd = open_read(path);
  posix_fadvise(fd.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
  std::vector<std::byte> buffer(kBuffer);
  Checksum sum;
  for (std::uint64_t offset = 0;;) {
    const std::size_t n = pread_full(fd.get(), buffer, offset, path);
    sum.update(std::span(buffer.data(), n));
    offset += n;
    if (n < buffer.size()) break;
  }
  return sum.text();
}

OutputFile::OutputFile(std::string path) : path_(std::move(path)), buffer_(kBuffer) {
  fd_ = Fd(::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (fd_.get() < 0) fail("cannot create", path_, errno);
}

void OutputFile::start_writeback() {
  if (written_ - synced_ < kWriteback) return;
  // Advice only: an error (a file system without it) changes nothing written.
  (void)::sync_file_range(fd_.get(), static_cast<off64_t>(synced_), static_cast<off64_t>(written_ - synced_),
                          SYNC_FILE_RANGE_WRITE);
  synced_ = written_;
}

void OutputFile::flush() {
  std::size_t done = 0;
  while (done < used_) {
    const ssize_t n = ::write(fd_.get(), buffer_.data() + done, used_ - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("cannot write", path_, n < 0 ? errno : EIO);
    done += static_cast<std::size_t>(n);
  }
  written_ += used_;
  used_ = 0;
  start_writeback();
}

void OutputFile::write(std::span<const std::byte> bytes) {
  if (fd_.get() < 0) throw Error(path_ + ": write after finish");
  checksum_.update(bytes);
  bytes_ += bytes.size();
  if (used_ + bytes.size() > buffer_.size()) flush();
  if (bytes.size() >= kDirect) {  // large: straight from the caller's memory, no copy
    flush();
    std::size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::write(fd_.get(), bytes.data() + done, bytes.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) fail("cannot write", path_, n < 0 ? errno : EIO);
      done += static_cast<std::size_t>(n);
    }
    written_ += bytes.size();
    start_writeback();
    return;
  }
  std::memcpy(buffer_.data() + used_, bytes.data(), bytes.size());
  used_ += bytes.size();
}

void OutputFile::finish() {
  if (fd_.get() < 0) return;
  flush();
  if (::fsync(fd_.get()) != 0) fail("cannot fsync", path_, errno);
  fd_.reset();
}

void publish_file(const std::string& from, const std::string& to) {
  if (::rename(from.c_str(), to.c_str()) != 0) fail("cannot rename " + from + " to", to, errno);
  fsync_folder(to);
}

}  // namespace sluice::io::detail
