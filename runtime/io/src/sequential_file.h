// Internal: a file read front to back through one growable buffer.
//
// take(n) returns the next n bytes as one contiguous span, reading more with
// read(2) as needed; the span stays valid until the next take(). Memory is the
// buffer: max(initial capacity, the largest span taken).
//
// read_into(dst) copies the next bytes into the caller's memory instead: what
// is buffered, then the rest read(2) straight into dst in pieces of at most the
// initial capacity, so each piece is still in cache when the optional CRC32C
// runs over it. Use it for spans much larger than the buffer.
//
// Thread safety: none.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "file_util.h"

namespace sluice::io::detail {

class SequentialFile {
 public:
  // Opens `path` (throws sluice::Error naming it) and advises sequential access.
  explicit SequentialFile(std::string path, std::size_t capacity = 256 * 1024);

  const std::string& path() const { return path_; }
  // Offset in the file of the next byte take() returns.
  std::uint64_t position() const { return position_; }

  // The next n bytes; fewer (possibly none) only at the end of the file.
  // Throws sluice::Error on an I/O error.
  std::span<const std::byte> take(std::size_t n);

  // Fills dst with the next bytes and returns how many it got (fewer than
  // dst.size() only at the end of the file). When crc is given, *crc continues
  // as crc32c(*crc, the bytes got). Throws sluice::Error on an I/O error.
  std::size_t read_into(std::span<std::byte> dst, std::uint32_t* crc = nullptr);

 private:
  std::string path_;
  Fd fd_;
  ScratchBuffer buf_;
  std::size_t capacity_;
  std::size_t piece_;                // read_into's largest read: the initial capacity
  std::size_t begin_ = 0, end_ = 0;  // unread bytes are buf_[begin_, end_)
  std::uint64_t position_ = 0;
  bool eof_ = false;
};

}  // namespace sluice::io::detail
