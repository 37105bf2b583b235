#include "sequential_file.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "sluice/error.h"
#include "sluice/io/crc32c.h"

namespace sluice::io::detail {

SequentialFile::SequentialFile(std::string path, std::size_t capacity)
    : path_(std::move(path)), fd_(open_read(path_)), buf_(capacity),
      capacity_(buf_.size()), piece_(capacity) {
  posix_fadvise(fd_.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
}

std::span<const std::byte> SequentialFile::take(std::size_t n) {
  if (end_ - begin_ < n && !eof_) {
    const std::size_t have = end_ - begin_;
    if (n > capacity_) {  // grow, keeping the unread bytes
      std::size_t cap = capacity_;
      while (cap < n) cap *= 2;
      ScratchBuffer bigger(cap);
      std::memcpy(bigger.data(), buf_.data() + begin_, have);
      buf_ = std::move(bigger);
      capacity_ = buf_.size();
      begin_ = 0;
      end_ = have;
    } else if (begin_ + n > capacity_ || capacity_ - end_ < capacity_ / 4) {
      // Move the unread tail to the front so reads stay large.
      std::memmove(buf_.data(), buf_.data() + begin_, have);
      begin_ = 0;
      end_ = have;
    }
    while (end_ - begin_ < n) {
      ssize_t r = ::read(fd_.get(), buf_.data() + end_, capacity_ - end_);
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
  std::span<const std::byte> out(buf_.data() + begin_, k);
  begin_ += k;
  position_ += k;
  return out;
}

std::size_t SequentialFile::read_into(std::span<std::byte> dst, std::uint32_t* crc) {
  const std::size_t buffered = std::min(dst.size(), end_ - begin_);
  std::memcpy(dst.data(), buf_.data() + begin_, buffered);
  if (crc) *crc = crc32c(dst.first(buffered), *crc);
  begin_ += buffered;
  position_ += buffered;
  std::size_t got = buffered;
  while (got < dst.size() && !eof_) {
    const std::size_t want = std::min(piece_, dst.size() - got);
    ssize_t r = ::read(fd_.get(), dst.data() + got, want);
    if (r < 0) {
      if (errno == EINTR) continue;
      throw Error(at_offset(path_, position_, std::string("read failed: ") + std::strerror(errno)));
    }
    if (r == 0) {
      eof_ = true;
      break;
    }
    if (crc) *crc = crc32c(dst.subspan(got, static_cast<std::size_t>(r)), *crc);
    got += static_cast<std::size_t>(r);
    position_ += static_cast<std::uint64_t>(r);
  }
  return got;
}

}  // namespace sluice::io::detail
