// Internal: a file being written whole, buffered, with its byte count and
// checksum kept as it goes (so a written shard is never read back to be
// summed), made durable and visible in one step.
//
// Writeback starts as the file grows (sync_file_range), so the final fsync
// waits for the last few MiB only.
//
// The publish protocol (what keeps a crash from leaving a file that looks
// complete but is not): write under a temporary name, fsync the file, rename
// it to its final name, fsync the folder. A reader that finds the final name
// finds the whole file.
//
// Thread safety: none; one OutputFile per thread. Errors: sluice::Error
// naming the file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "file_util.h"

namespace sluice::io::detail {

// Streaming XXH3-64 over bytes, written as "xxh3:<16 hex digits>".
class Checksum {
 public:
  Checksum();
  ~Checksum();
  Checksum(const Checksum&) = delete;
  Checksum& operator=(const Checksum&) = delete;
  void update(std::span<const std::byte> bytes);
  std::string text() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// The checksum of a whole file, as Checksum::text(); throws naming the file.
std::string file_checksum(const std::string& path);

class OutputFile {
 public:
  // Creates or truncates `path`.
  explicit OutputFile(std::string path);
  void write(std::span<const std::byte> bytes);
  void write(std::string_view bytes) { write(std::as_bytes(std::span(bytes.data(), bytes.size()))); }
  std::uint64_t bytes() const { return bytes_; }
  std::string checksum() const { return checksum_.text(); }
  // Flushes and fsyncs, then closes. Further writes throw.
  void finish();
  const std::string& path() const { return path_; }

 private:
  void flush();
  void start_writeback();
  std::string path_;
  Fd fd_;
  std::vector<std::byte> buffer_;
  std::size_t used_ = 0;
  std::uint64_t bytes_ = 0;
  std::uint64_t written_ = 0;  // handed to write(2)
  std::uint64_t synced_ = 0;   // of those, asked to be written back
  Checksum checksum_;
};

// Renames `from` to `to` (same folder) and fsyncs the folder.
void publish_file(const std::string& from, const std::string& to);

}  // namespace sluice::io::detail
