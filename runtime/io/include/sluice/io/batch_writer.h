// sluice/io/batch_writer.h: a Loader's batches into shards (`sluice write`,
// sluice.write() in Python), by ShardWriter (sluice/io/shard_writer.h).
//
//   io::BatchWriter out(options.fields, {.dir = "shards", .format = "tar", .shard_samples = 1000});
//   if (!out.shards().already_complete()) {
//     out.prepare(options);                   // one epoch, in order, from where kept shards end
//     Loader loader(options);
//     while (auto batch = loader.next()) out.write(*batch);
//     out.finish();
//   }
//
// Fields: a bytes field (FieldSpec::max_bytes) is written as its bytes; so is
// a Python variable-length value, carried as a uint8 field X of shape {room}
// plus an int64 scalar X.lengths (python/sluice/_structure.py): X holds the
// first X.lengths bytes of its row. Every other field is written with its
// dtype and shape (see shard_writer.h for the encodings).
//
// Resume: prepare() points the options at the batch where the kept shards
// end, and the first batch's rows already written are skipped.
//
// The plan: write_plan() names what decides which samples land in which
// shard (dataset size, batch size, drop_last, shuffle, its window and the
// shard layout, seed, rank, world size and shard policy, skip_fill, and the
// pipeline's hash, as in the run record's header); pass it as
// ShardWriterOptions::plan so a resume with another plan is refused. The
// worker count is not in it: the shards are the same for any.
//
// Errors: sluice::Error. Thread safety: none.
#pragma once

#include "sluice/export.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sluice/batch.h"
#include "sluice/io/shard_writer.h"
#include "sluice/options.h"

namespace sluice::io {

// `script_hash`: the pipeline's (RecordHeader::script_hash), "" for none.
SLUICE_API std::map<std::string, std::string> write_plan(const Options& options, const std::string& script_hash);

class SLUICE_API BatchWriter {
 public:
  // out.fields is filled from `fields` here.
  BatchWriter(const std::vector<FieldSpec>& fields, ShardWriterOptions out);

  ShardWriter& shards() { return writer_; }
  // epochs = 1, ordered = true, and resume from the kept shards' end.
  void prepare(Options& options) const;
  void write(const Batch& batch);
  const Manifest& finish() { return writer_.finish(); }
  const Manifest& stop() { return writer_.stop(); }  // ShardWriter::stop
  std::uint64_t samples_written() const { return written_; }

 private:
  struct Source {
    std::size_t field;                // index in the batch
    std::int64_t lengths = -1;        // index of X.lengths, or -1
    bool max_bytes = false;           // a FieldSpec::max_bytes field
  };
  static std::vector<ManifestField> describe(const std::vector<FieldSpec>& fields, std::vector<Source>& sources);

  std::vector<Source> sources_;
  ShardWriter writer_;
  std::uint64_t skip_rows_;
  std::uint64_t written_ = 0;
  std::vector<std::span<const std::byte>> values_;
};

}  // namespace sluice::io
