// sluice/io/shard_writer.h: samples in, verified shards out (`sluice write`,
// sluice.write()).
//
// A ShardWriter takes samples in plan order and writes them to DIR as
// WebDataset tars (shard-NNNNNN.tar: one member per field, KEY.EXT, the key
// the sample id as nine or more digits) or TFRecords of tf.train.Example
// (shard-NNNNNN.tfrecord, one feature per field plus "__key__"), each with its
// index FILE.idx beside it (a tar's: tar_index.h; a TFRecord's offsets:
// tfrecord.h), and keeps DIR/manifest.json (manifest.h).
//
// Field encoding. A "bytes" field is written as it is: a .jpg stays the JPEG
// it was (tar: member KEY.EXT, ext defaulting to the field name; TFRecord: a
// one-entry bytes_list). A numeric field: in a tar, an integer scalar as
// decimal text (ext NAME.cls, or "cls" for a field named cls) and anything
// else as a .npy (ext NAME.npy); in a TFRecord, integers as an int64_list,
// floats as a float_list (float64 rounded to float32: the manifest records
// float32 for such a field, and notes() says so), in C order; a uint64 value
// past int64 is refused (add() throws naming the sample).
//
// Shard boundaries are a pure function of the samples in order: with
// shard_samples, every shard but the last holds exactly that many; with
// shard_bytes, a shard is closed before the sample that would take it past
// the limit (a shard holds at least one sample). So the shards' names and
// bytes do not depend on how many workers made the samples.
//
// Crash safety and resume: each shard is written to NAME.tmp, fsynced and
// renamed, then the manifest is rewritten atomically with it and the plan
// position after its last sample. That publication runs on a thread of its
// own while the next shard is written (one at a time, in order), so the
// fsync costs no time unless the disk is slower than the samples; a
// failure there is thrown by the add() that ends the next shard, or by
// finish(). A new ShardWriter on a folder whose
// manifest describes the same conversion (format, cut, fields, and the same
// plan: ShardWriterOptions::plan, when given) keeps the
// shards it lists (each checked against its size and checksum; the first
// that fails and every later one is dropped), deletes leftovers (*.tmp,
// unlisted shard-* files) and reports where to start again (resume_batch,
// resume_row). A manifest of another conversion is an error that says so;
// an existing folder with files but no manifest is refused too. A plan that
// differs (the order the samples come in, so the kept shards and the rest
// would overlap and leave gaps) is an error naming each setting that differs;
// so is resuming an incomplete manifest that records no plan (written before
// plans were recorded: whether its order matches cannot be known). A complete
// one without a plan is kept as it is. An empty options.plan checks nothing.
// A writer holds an flock on its folder (the directory itself) while it
// lives: a second writer of the same folder (or staging folder) is
// refused at once, naming it, instead of the two failing on each other's
// files; a killed writer's lock goes with its process.
//
// To a store: a DIR of s3://bucket/prefix/ writes each shard to a local
// staging folder first (as above), then uploads it (remote/upload.h: one PUT,
// or a multipart upload for large shards; the shard's index before it), deletes the local copy, and uploads the manifest that lists it, so
// a reader of the store never finds a manifest listing a missing shard. The
// manifest in the store is the journal: a new ShardWriter on the same URL
// keeps the shards it lists that the store holds with the listed size (one
// HEAD each) and starts after them; the local staging folder keeps nothing
// across runs. Two writers to one URL at a time are not supported.
//
// Errors: sluice::Error naming the folder or URL, shard or field; a store's
// refusal names the URL, the HTTP status and the store's message. Thread
// safety: none (one thread calls a ShardWriter).
#pragma once

#include "sluice/export.h"

#include <cstdint>
#include <map>
#include <optional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "sluice/io/manifest.h"

namespace sluice::io {

struct SLUICE_API ShardWriterOptions {
  std::string dir;                   // a local folder, or s3://bucket/prefix/
  std::string format = "tar";        // "tar" or "tfrecord"
  std::uint64_t shard_samples = 0;   // exactly one of these two is > 0
  std::uint64_t shard_bytes = 0;
  // dtype "bytes" (shape empty) or a dtype name; ext empty = the default above.
  std::vector<ManifestField> fields;
  // For an s3:// dir: the local folder shards are staged in ("" =
  // CACHE/write/<hash of the URL>, CACHE the run's cache_dir, else as in
  // remote/cache.h).
  std::string staging = "";
  // What decides which sample goes where (batch_writer.h write_plan()),
  // recorded in the manifest and checked on resume; empty = not checked.
  std::map<std::string, std::string> plan = {};
  // To a store: each request's retries and stall timeout (the run settings
  // remote_retries and remote_timeout_ms); unset: the transport's defaults.
  std::optional<std::uint32_t> remote_retries = std::nullopt;
  std::optional<std::uint32_t> remote_timeout_ms = std::nullopt;
  // The run setting cache_dir: where the default staging folder lies ("" =
  // remote::default_cache_dir()).
  std::string cache_dir = "";
};

class SLUICE_API ShardWriter {
 public:
  explicit ShardWriter(ShardWriterOptions options);
  ~ShardWriter();
  ShardWriter(const ShardWriter&) = delete;
  ShardWriter& operator=(const ShardWriter&) = delete;

  // Where the samples should start: the plan position after the last sample
  // of the completed shards kept (0, 0 for a fresh folder).
  std::uint64_t resume_batch() const;
  std::uint64_t resume_row() const;
  std::uint64_t samples_kept() const;  // samples in the shards kept
  std::size_t shards_kept() const;
  bool already_complete() const;       // the manifest said complete: nothing to do
  // What the writer changed of the fields, for the user (a float64 field in a TFRecord).
  const std::vector<std::string>& notes() const;

  // One sample: `values[i]` holds field i (the bytes of a bytes field, or the
  // field's elements in C order: exactly dtype size x shape elements).
  // (next_batch, next_row) is the plan position after this sample, recorded
  // when the shard it ends up in completes.
  void add(std::uint64_t id, std::span<const std::span<const std::byte>> values,
           std::uint64_t next_batch, std::uint64_t next_row);

  // Publishes the last shard and marks the manifest complete.
  const Manifest& finish();
  // Ends without finishing (the command was stopped): waits for the shard
  // being published (its failure thrown) and drops the one being written.
  // The manifest lists what a next writer keeps. No add() after it.
  const Manifest& stop();
  const Manifest& manifest() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sluice::io
