// Internal: files read front to back through one growable buffer.
//
// take(n) returns the next n bytes as one contiguous span in the buffer,
// reading more with read(2) as needed; the span stays valid until the next
// take() or open(). Reads are large, because on VMs each read(2) costs a few
// microseconds whatever its size:
//   - a small take (n <= chunk / 2) refills the buffer up to `chunk` bytes at
//     a time, so later small takes are served without a system call;
//   - a large take reads what is missing in one read(2), plus a few KiB past
//     it (the next record's header, typically), so a large record lands in
//     place with no copy in user space and a later large take moves at most
//     `chunk` buffered bytes to the front of the buffer.
// Memory is the buffer: about max(chunk, the largest take + chunk). It is kept
// from one open() to the next, so a stream over many files faults its pages
// in once.
//
// Thread safety: none.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "file_util.h"

namespace sluice::io::detail {

class SequentialFile {
 public:
  explicit SequentialFile(std::size_t chunk = 256 * 1024);

  // Opens `path` (throws sluice::Error naming it; the previous file is closed
  // either way) and advises sequential access.
  void open(std::string path);
  void close();
  bool is_open() const { return fd_.get() >= 0; }

  const std::string& path() const { return path_; }
  // Offset in the file of the next byte take() returns.
  std::uint64_t position() const { return position_; }
  // The file's size when opened.
  std::uint64_t size() const { return size_; }

  // The next n bytes; fewer (possibly none) only at the end of the file.
  // Throws sluice::Error naming the file and offset on an I/O error.
  std::span<const std::byte> take(std::size_t n);

 private:
  // Makes buf_[begin_, begin_ + room) writable, keeping the unread bytes.
  void make_room(std::size_t room);
  // Appends up to `want` bytes with read(2) (looping on short reads) until at
  // least `need` bytes are unread or the file ends.
  void fill(std::size_t need, std::size_t want);

  std::size_t chunk_;
  std::string path_;
  Fd fd_;
  ScratchBuffer buf_;
  std::size_t begin_ = 0, end_ = 0;  // unread bytes are buf_[begin_, end_)
  std::uint64_t position_ = 0;
  std::uint64_t size_ = 0;
  bool eof_ = false;
};

}  // namespace sluice::io::detail
