// sluice/io/tfrecord_stream.h: TFRecord shards read front to back, no index.
//
// Reads each shard sequentially with read(2) through one buffer kept for the
// stream's lifetime (no whole-file buffering): 256 KiB at a time while records
// are small, a large record in one read(2) straight to its place. Records are
// handed out in place, their CRC32C computed there. Memory is that buffer
// (about the largest record plus 256 KiB) plus the shuffle buffer's records.
// Reuse one stream across epochs (reset) to reuse it. Shards
// are taken in (optionally shuffled) order, partitioned among workers by
// StreamOptions::shard_index/shard_count; records are shuffled within a
// buffer of StreamOptions::shuffle_buffer records.
//
// Bad input: a data CRC mismatch loses one record; a length CRC mismatch or a
// truncated record loses the rest of its shard. on_error = fail throws
// sluice::Error naming file, record and byte offset; skip notes it in skips()
// and goes on. A skipped record's id is its read order in the epoch. A
// shard that a manifest beside it lists (manifest.h) is checked against its
// size and checksum when first opened: a corrupt one is an error naming it
// (on_error = fail), or is skipped whole and noted (skip).
//
// Thread safety: none (see record_stream.h).
#pragma once

#include "sluice/export.h"

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "sluice/io/record_stream.h"

namespace sluice::io {

namespace detail {
class SequentialFile;
}

class SLUICE_API TFRecordStream final : public RecordStream {
 public:
  // Starts epoch 0. Missing shards are reported when reached.
  TFRecordStream(std::vector<std::string> shards, StreamOptions options = {});
  ~TFRecordStream() override;

  void reset(std::uint64_t epoch) override;
  bool next(Sample& out) override;
  const SkipLog& skips() const override { return skips_; }

 private:
  struct Held {  // a record waiting in the shuffle buffer
    std::vector<std::byte> bytes;
    std::uint32_t shard;
    std::uint64_t record, offset, id;
  };
  // Reads the next good record of this epoch into `record`, `meta`; false at the end.
  bool read_record(std::span<const std::byte>& data, Held& meta);
  bool open_next_shard();
  void fill(Sample& out, std::span<const std::byte> data, const Held& meta) const;

  std::vector<std::string> shards_;
  StreamOptions options_;
  std::vector<std::uint32_t> order_;    // this worker's shards for the epoch
  std::size_t next_shard_ = 0;
  std::unique_ptr<detail::SequentialFile> file_;  // the open shard, if any
  std::uint32_t shard_ = 0;             // shard of file_
  std::uint64_t record_ = 0;            // next record number in file_
  std::uint64_t read_count_ = 0;        // records read this epoch (ids)
  std::vector<Held> buffer_;            // shuffle buffer
  Held current_;                        // the record handed out by next()
  std::mt19937_64 rng_;
  SkipLog skips_;
};

}  // namespace sluice::io
