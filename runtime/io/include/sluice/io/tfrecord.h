// sluice/io/tfrecord.h: TFRecord shards with random access through an index.
//
// Framing, per record: uint64 length, uint32 masked CRC32C of the length
// bytes, `length` data bytes, uint32 masked CRC32C of the data (all little
// endian). decode() checks both CRCs (unless verify_crc is off) and the length.
//
// The index of a shard is the list of its record offsets. It is kept in a
// sidecar text file, one "offset frame_size" line per record (the format of
// DALI's tfrecord2idx and of the `tfrecord` Python package), named FILE.idx
// beside the shard or, with index_dir, in that folder. TFRecordSource loads a
// sidecar when it is newer than its shard and consistent with its size, and
// otherwise scans the shard (reading only the 12-byte headers, checking the
// length CRCs) and writes the sidecar when it can (a read-only folder leaves
// the index in memory only). `sluice index` builds sidecars ahead of time.
//
// Thread safety: TFRecordSource is immutable after construction. The free
// functions are reentrant.
#pragma once

#include "sluice/export.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sluice/io/skip_log.h"
#include "sluice/io/record_source.h"

namespace sluice::io {

struct SLUICE_API TFRecordOptions {
  bool verify_crc = true;
  std::string index_dir;      // where sidecars live; empty = beside each shard
  bool write_index = true;    // write a sidecar after scanning a shard
  // fail: a corrupt or truncated shard throws while indexing. skip: the shard
  // is indexed up to the bad record, which is noted in index_skips().
  OnError on_error = OnError::fail;
};

// Record offsets of one shard, plus the file size as the last element (so
// record i spans [offsets[i], offsets[i + 1])).
struct SLUICE_API TFRecordIndex {
  std::vector<std::uint64_t> offsets;
  std::uint64_t records() const { return offsets.empty() ? 0 : offsets.size() - 1; }
};

// Scans a shard's headers. Throws sluice::Error naming the file, record and
// byte offset of a truncated record or a length CRC mismatch; with
// on_error = skip, stops there instead, appending the reason to `skips`.
SLUICE_API TFRecordIndex scan_tfrecord(const std::string& path, OnError on_error = OnError::fail,
                            SkipLog* skips = nullptr);

// FILE.idx, or index_dir/BASENAME.<hash of the absolute path>.idx.
SLUICE_API std::string tfrecord_index_path(const std::string& shard, const std::string& index_dir);

// Writes the sidecar atomically (temp file + rename). Throws sluice::Error.
SLUICE_API void write_tfrecord_index(const std::string& index_path, const TFRecordIndex& index);

// Reads a sidecar; nullopt when it is absent, older than the shard, or
// inconsistent with the shard's size.
SLUICE_API std::optional<TFRecordIndex> load_tfrecord_index(const std::string& index_path, const std::string& shard);

// Reads a sidecar on its own, with no shard to check it against (its last
// offset is then the shard's expected size); nullopt when absent or malformed.
SLUICE_API std::optional<TFRecordIndex> read_tfrecord_index(const std::string& index_path);

class SLUICE_API TFRecordSource final : public RecordSource {
 public:
  // Indexes every shard (loading or building sidecars). Throws sluice::Error
  // for a missing shard, or a corrupt one under on_error = fail.
  explicit TFRecordSource(std::vector<std::string> shards, TFRecordOptions options = {});
  // With every shard's index given (indexes[i] for shards[i]): touches no
  // shard, which may not exist yet (a remote shard fetched later into the
  // node cache). A record read past a shard's actual end fails in decode.
  TFRecordSource(std::vector<std::string> shards, std::vector<TFRecordIndex> indexes, TFRecordOptions options);

  std::string_view format() const override { return "tfrecord"; }
  std::uint64_t size() const override { return starts_.back(); }
  const std::vector<std::string>& files() const override { return shards_; }
  SampleLocation locate(std::uint64_t id) const override;
  void decode(const SampleLocation& where, std::span<const std::byte> raw,
              Sample& out) const override;

  std::uint64_t records_in(std::size_t shard) const { return indexes_[shard].records(); }
  // Shards cut short while indexing (on_error = skip).
  const SkipLog& index_skips() const { return index_skips_; }
  // The indexes that could not be saved (a full or read-only folder), each
  // "PATH: why": those shards are scanned again next time.
  const std::vector<std::string>& unsaved_indexes() const { return unsaved_indexes_; }

 private:
  std::vector<std::string> shards_;
  TFRecordOptions options_;
  std::vector<TFRecordIndex> indexes_;
  std::vector<std::uint64_t> starts_;  // first global id of each shard, plus the total
  SkipLog index_skips_;
  std::vector<std::string> unsaved_indexes_;
};

}  // namespace sluice::io
