#include "sequential_file.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "sluice/error.h"

namespace sluice::io::detail {
namespace {

// A large take reads this much past its end.
constexpr std::size_t kReadPast = 4096;
// A byte's index in the buffer equals its file offset modulo this: read(2)
// copies out of the page cache fastest when source and destination share
// their alignment within a cache line (measured: 10-15% at 1 MiB reads).
constexpr std::size_t kAlign = 64;
constexpr std::size_t kPage = 4096;

}  // namespace

SequentialFile::SequentialFile(std::size_t chunk) : chunk_(chunk), buf_(chunk) {}

void SequentialFile::open(std::string path) {
  close();
  Fd fd = open_read(path);
  size_ = file_size(fd.get(), path);
  fd_ = std::move(fd);
  path_ = std::move(path);
  posix_fadvise(fd_.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
}

void SequentialFile::close() {
  fd_.reset();
  begin_ = end_ = 0;
  position_ = 0;
  size_ = 0;
  eof_ = false;
}

void SequentialFile::make_room(std::size_t room) {
  if (begin_ + room <= buf_.size()) return;
  const std::size_t have = end_ - begin_;
  const std::size_t to = position_ % kAlign;  // keeps index = file offset (mod kAlign)
  if (to + room > buf_.size()) {  // grow, keeping the unread bytes
    ScratchBuffer bigger(std::max(to + room, 2 * buf_.size()));
    std::memcpy(bigger.data() + to, buf_.data() + begin_, have);
    buf_ = std::move(bigger);
  } else {
    std::memmove(buf_.data() + to, buf_.data() + begin_, have);
  }
  begin_ = to;
  end_ = to + have;
}

void SequentialFile::fill(std::size_t need, std::size_t want) {
  // Reads end on a page boundary of the file where the buffer allows, so each
  // read starts on one: page-sized copies, source and destination aligned.
  std::size_t stop = end_ + want;
  const std::uint64_t stop_offset = position_ + (stop - begin_);
  stop = std::min(buf_.size(), stop + (kPage - stop_offset % kPage) % kPage);
  while (end_ - begin_ < need && !eof_) {
    ssize_t r = ::read(fd_.get(), buf_.data() + end_, stop - end_);
    if (r < 0) {
      if (errno == EINTR) continue;
      throw Error(at_offset(path_, position_ + (end_ - begin_),
                            std::string("read failed: ") + std::strerror(errno)));
    }
    if (r == 0) eof_ = true;
    end_ += static_cast<std::size_t>(r);
  }
}

std::span<const std::byte> SequentialFile::take(std::size_t n) {
  const std::size_t have = end_ - begin_;
  if (have < n && !eof_) {
    if (n <= chunk_ / 2) {
      // Small: top up by at most a chunk; move the unread bytes to the front
      // first when less than a quarter chunk is left behind them.
      const bool low = buf_.size() - end_ < chunk_ / 4;
      make_room(low ? buf_.size() - kAlign : n);
      fill(n, std::min(chunk_, buf_.size() - end_));
    } else {
      // Large: the rest of the span and a little more, in one read.
      make_room(n + kReadPast + kPage);
      fill(n, n - have + kReadPast);
    }
  }
  const std::size_t k = std::min(n, end_ - begin_);
  std::span<const std::byte> out(buf_.data() + begin_, k);
  begin_ += k;
  position_ += k;
  return out;
}

}  // namespace sluice::io::detail
