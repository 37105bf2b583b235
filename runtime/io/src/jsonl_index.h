// Internal: building JSON lines indexes, and decompressed copies of gzip and
// zstd files (see sluice/io/jsonl.h).
//
// Thread safety: LineScanner is not synchronised; the functions are reentrant.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "sluice/io/jsonl.h"

namespace sluice::io::detail {

// A UTF-8 byte-order mark: before a file's first line it is not content (the
// scanner does not count it, decode drops it).
inline constexpr char kUtf8Bom[] = "\xEF\xBB\xBF";
inline constexpr std::size_t kUtf8BomSize = 3;

// Finds the non-blank lines of a text fed to it in pieces.
class LineScanner {
 public:
  explicit LineScanner(std::string path) : path_(std::move(path)) {}
  void feed(const char* data, std::size_t n);
  // The index, with the last line counted whether or not a newline ends it.
  JsonlIndex finish();

 private:
  void end_line();
  std::string path_;
  JsonlIndex index_;
  std::uint64_t pos_ = 0, line_start_ = 0, line_ = 1;
  bool nonblank_ = false;
  char last_ = 0;
};

enum class Compression { none, gzip, zstd };

// By the file's magic bytes. Throws sluice::Error when it cannot be opened.
Compression sniff_compression(const std::string& path);

struct DecompressedCopy {
  std::string copy_path;            // copy_path as asked, or copy_path + ".cut" when damaged
  JsonlIndex index;                 // of the copy
  std::string damage;               // "" or "FILE: why after N compressed bytes (M decompressed)"
  std::uint64_t complete_bytes = 0;
};

// Decompresses `path` into `copy_path` (atomically), indexing as it goes.
// Damage throws sluice::Error under OnError::fail; under skip the lines that
// ended before it are kept, in copy_path + ".cut".
DecompressedCopy decompress_jsonl(const std::string& path, Compression compression, const std::string& copy_path,
                                  OnError on_error);

}  // namespace sluice::io::detail
