// sluice/io/record_stream.h: samples read front to back, for data that has no
// index (TFRecord without sidecar indexes, gzip-compressed tar shards).
//
// A stream covers one epoch; reset(epoch) starts the next one (with that
// epoch's shard order and shuffle). next() fills `out` with the next sample and
// returns false at the end of the epoch. The Sample's bytes stay valid until
// the next call to next() or reset().
//
// Thread safety: none; one stream per thread (per worker process).
#pragma once

#include "sluice/export.h"

#include <cstdint>
#include <string>
#include <vector>

#include "sluice/io/skip_log.h"
#include "sluice/io/sample.h"

namespace sluice::io {

// How a stream orders and partitions its shards. One struct for every stream.
struct SLUICE_API StreamOptions {
  std::uint64_t seed = 0;
  bool shuffle_shards = false;       // a fresh shard order per (seed, epoch)
  std::size_t shuffle_buffer = 0;    // records held to shuffle among; 0 = file order
  // This reader's share: the shards at positions p (of this epoch's order)
  // with p % shard_count == shard_index. Give each worker its own index.
  std::uint32_t shard_index = 0;
  std::uint32_t shard_count = 1;
  OnError on_error = OnError::fail;
  bool verify_crc = true;            // TFRecord: check both masked CRC32Cs
};

class SLUICE_API RecordStream {
 public:
  virtual ~RecordStream() = default;
  virtual void reset(std::uint64_t epoch) = 0;
  virtual bool next(Sample& out) = 0;
  // Samples skipped so far in this epoch (on_error = skip).
  virtual const SkipLog& skips() const = 0;
};

}  // namespace sluice::io
