// sluice/io/record_source.h: random access to the samples of a data set.
//
// A RecordSource knows where each sample lies (locate: no I/O) and how to check
// and slice the bytes read from there (decode). Reading is left to the caller:
// an AsyncReader (sluice/io/async_reader.h) reads ahead with libuv, and
// read_sample() below reads synchronously. Samples are numbered [0, size()).
//
// Implementations: FileSource (files, globs, ImageNet folders), TFRecordSource
// (indexed TFRecord shards), TarSource (uncompressed WebDataset tar shards).
//
// Thread safety: a constructed source is immutable; its const methods may be
// called concurrently. It is safe to build one before fork() and use it in
// the children (it holds no file descriptors or threads).
#pragma once

#include "sluice/export.h"

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/io/sample.h"

namespace sluice::io {

class SLUICE_API RecordSource {
 public:
  virtual ~RecordSource() = default;

  // "files", "tfrecord", "tar".
  virtual std::string_view format() const = 0;
  virtual std::uint64_t size() const = 0;
  virtual const std::vector<std::string>& files() const = 0;

  // Where sample `id` (< size()) lies. No I/O; never throws for a valid id.
  virtual SampleLocation locate(std::uint64_t id) const = 0;

  // Checks `raw`, the bytes read at `where`, and fills `out` (fields point
  // into `raw`, names into the source). Throws sluice::Error naming the file
  // and byte offset or record when the bytes are corrupt.
  virtual void decode(const SampleLocation& where, std::span<const std::byte> raw,
                      Sample& out) const = 0;
};

// Reads sample `id` synchronously (open, pread, close) into `buffer` and
// decodes it into `out`. Throws sluice::Error for a missing file, a short read
// or corrupt bytes. For tools and tests; workers use an AsyncReader.
SLUICE_API void read_sample(const RecordSource& source, std::uint64_t id, std::vector<std::byte>& buffer,
                 Sample& out);

}  // namespace sluice::io
