#include "sequential_file.h"

#include <cerrno>
#include <cstring>

#include "sluice/error.h"

namespace sluice::io::detail {

SequentialFile::SequentialFile(std::string path, std::size_t capacity)
    : path_(std::move(path)), fd_(open_read(path_)), buf_(new std::byte[capacity]),
      capacity_(capacity) {
  posix_fadvise(fd_.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
}

std::span<const std::byte> SequentialFile::take(std::size_t n) {
  if (end_ - begin_ < n && !eof_) {
    const std::size_t have = end_ - begin_;
    if (n > capacity_) {  // grow, keeping the unread bytes
      std::size_t cap = capacity_;
      while (cap < n) cap *= 2;
      std::unique_ptr<std::byte[]> bigger(new std::byte[cap]);
      std::memcpy(bigger.get(), buf_.get() + begin_, have);
      buf_ = std::move(bigger);
      capacity_ = cap;
      begin_ = 0;
      end_ = have;
    } else if (begin_ + n > capacity_ || capacity_ - end_ < capacity_ / 4) {
      // Move the unread tail to the front so reads stay large.
      std::memmove(buf_.get(), buf_.get() + begin_, have);
      begin_ = 0;
      end_ = have;
    }
    while (end_ - begin_ < n) {
      ssize_t r = ::read(fd_.get(), buf_.get() + end_, capacity_ - end_);
      if (r < 0) {
        if (errno == EINTR) continue;
        throw Error(at_offset(path_, position_ + (end_ - begin_),
                              std::string("read failed: ") + std::strerror(errno)));
      }
      if (r == 0) {
        eof_ = true;
        break;
      }
      end_ += static_cast<std::size_t>(r);
    }
  }
  const std::size_t k = std::min(n, end_ - begin_);
  std::span<const std::byte> out(buf_.get() + begin_, k);
  begin_ += k;
  position_ += k;
  return out;
}

}  // namespace sluice::io::detail
