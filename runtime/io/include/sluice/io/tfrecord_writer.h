// sluice/io/tfrecord_writer.h: writes TFRecord files (both masked CRC32Cs), for
// tests, benchmarks and conversion tools.
//
// Thread safety: none; one writer per thread.
#pragma once

#include "sluice/export.h"

#include <cstdint>
#include <cstdio>
#include <span>
#include <string>

namespace sluice::io {

class SLUICE_API TFRecordWriter {
 public:
  // Creates or truncates `path`. Throws sluice::Error naming it.
  explicit TFRecordWriter(std::string path);
  ~TFRecordWriter();  // closes; errors at that point are lost: call close()
  TFRecordWriter(const TFRecordWriter&) = delete;
  TFRecordWriter& operator=(const TFRecordWriter&) = delete;

  void write(std::span<const std::byte> record);
  // Flushes and closes; throws sluice::Error on a write error.
  void close();
  std::uint64_t records() const { return records_; }

 private:
  std::string path_;
  std::FILE* file_;
  std::uint64_t records_ = 0;
};

}  // namespace sluice::io
