// sluice/io/tar_writer.h: writes WebDataset tar shards that any tar reader
// (GNU tar, Python's tarfile, webdataset) reads.
//
// Members are regular files in POSIX ustar format with fixed metadata (mode
// 0644, uid/gid 0, mtime 0, no user names), so the same members always give
// the same bytes. A name longer than ustar holds goes in a pax extended header.
// The archive ends with two zero blocks.
//
// Durability: the shard is written under PATH.tmp and becomes PATH only in
// finish(), after an fsync (see output_file.h): a PATH that exists is whole.
// A writer destroyed before finish() removes PATH.tmp.
//
// Errors: sluice::Error naming the file. Thread safety: none; one per thread.
#pragma once

#include "sluice/export.h"

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace sluice::io {

// What a finished shard is: its size and checksum ("xxh3:<16 hex digits>").
struct SLUICE_API ShardSummary {
  std::string path;
  std::uint64_t samples = 0;
  std::uint64_t bytes = 0;
  std::string checksum;
};

class SLUICE_API TarWriter {
 public:
  explicit TarWriter(std::string path);
  ~TarWriter();
  TarWriter(const TarWriter&) = delete;
  TarWriter& operator=(const TarWriter&) = delete;

  // Appends the member `name` (e.g. "000000012.jpg") holding `data`.
  void add(std::string_view name, std::span<const std::byte> data);
  // Counts one sample (for the summary); members carry no sample boundary.
  void end_sample() { ++samples_; }
  std::uint64_t bytes() const;  // written so far (headers, data, padding)
  // Ends the archive, fsyncs and renames PATH.tmp to PATH.
  ShardSummary finish();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::uint64_t samples_ = 0;
};

// The 512-byte ustar header of a regular file (exposed for tests).
SLUICE_API void tar_file_header(std::string_view name, std::uint64_t size, std::span<std::byte, 512> out);

}  // namespace sluice::io
