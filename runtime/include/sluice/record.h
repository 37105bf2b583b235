// sluice/record.h: run records, to prove two runs saw the same data.
//
// A run record is a JSON-lines file: one header line (script hash, options,
// seed, Sluice version, rank and world size), then one line per delivered
// batch with its epoch, batch index, sample ids, an xxHash64 digest of each
// field and one digest per sample ("sample_digests": the sample's rows of every
// field, chained through XXH64's seed; older records have none), and one line
// per sample that on_error = skip dropped:
//   {"skip":{"sample":17,"reason":"map (p.lua:4) failed on sample 17 ..."}}
// (older records have no skip lines; readers that predate them see an unknown
// line). verify_records() compares two records batch by batch, then the sets
// of skipped samples. verify_records_global() compares two runs of any world
// sizes by global step (sluice/plan.h: a rank's batch s is its part of global
// step s): per (epoch, step) the multiset of sample ids of all ranks, and each
// sample's digest.
//
// Thread safety: a RunRecorder is used from one thread at a time.
#pragma once

#include "sluice/export.h"

#include <cstdint>
#include <cstdio>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/batch.h"

namespace sluice {

struct SLUICE_API RecordHeader {
  std::string script_hash;   // of the pipeline that made the batches, if any
  std::string options_json;  // a JSON object of the options that shape the data
  std::uint64_t seed = 0;
  std::uint32_t rank = 0;
  std::uint32_t world_size = 1;
  // Bytes fields of variable length (FieldSpec::max_bytes > 0): their digests
  // cover each row's length and bytes, not the unspecified rest of the row.
  std::vector<std::string> bytes_fields;
};

class SLUICE_API RunRecorder {
 public:
  // Creates or truncates path and writes the header. Throws Error.
  RunRecorder(const std::string& path, const RecordHeader& header);
  ~RunRecorder();
  RunRecorder(const RunRecorder&) = delete;
  RunRecorder& operator=(const RunRecorder&) = delete;

  // Appends one batch's line and hands it to the file (fflush, no fsync).
  // Throws Error if the write fails: then every earlier batch's line is
  // whole in the file and this one's is not there or cut.
  void record(const Batch& batch);
  // Appends one skipped sample's line, with why it was skipped. Throws Error
  // if the write fails.
  void record_skip(std::uint64_t sample, std::string_view reason);
  // What is recorded so far onto the file (an epoch's end of a run that goes
  // on); throws Error if that fails.
  void flush();
  // Flushes and closes; throws Error if that fails. The destructor closes too.
  void close();

 private:
  void write(const std::string& line);
  std::string path_;
  std::vector<std::string> bytes_fields_;
  std::FILE* file_ = nullptr;
  // A forked child's copy of the recorder neither flushes nor closes the
  // parent's file: its buffered lines would be written twice.
  std::uint64_t made_in_generation_ = 0;
};

// One skipped sample as a JSON object (no newline), properly escaped:
// {"sample":17,"epoch":0,"reason":"..."}; "epoch" only when given.
SLUICE_API std::string skip_json(std::uint64_t sample, std::optional<std::uint64_t> epoch, std::string_view reason);

// s as a JSON string literal, quotes included (for RecordHeader::options_json).
SLUICE_API std::string json_string(std::string_view s);

// xxHash64 of bytes, the digest used in records.
SLUICE_API std::uint64_t digest_bytes(const void* data, std::size_t size);

struct SLUICE_API VerifyResult {
  bool identical = false;
  std::uint64_t batches_compared = 0;
  std::string message;  // what differs first, and how; or a summary when identical
  std::vector<std::string> notes;  // e.g. a record whose last line a killed run cut off: left out
};

// Compares two records. Throws Error if a file cannot be read or is not a record.
SLUICE_API VerifyResult verify_records(const std::string& a, const std::string& b);

// Compares two runs, each given as the records of all its ranks (and of the
// runs that resumed it, whatever their world sizes), by global step; a run
// shorter than the other, missing steps, different samples or a sample's
// different content (when both have per-sample digests) are named with the
// first (epoch, step) that differs. Throws Error as verify_records() does.
// batches_compared counts global steps.
VerifyResult verify_records_global(std::span<const std::string> a, std::span<const std::string> b);

}  // namespace sluice
