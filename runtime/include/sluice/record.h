// sluice/record.h: run records, to prove two runs saw the same data.
//
// A run record is a JSON-lines file: one header line (script hash, options,
// seed, Sluice version, rank and world size), then one line per delivered
// batch with its epoch, batch index, sample ids and an xxHash64 digest of each
// field. verify_records() compares two records batch by batch.
//
// Thread safety: a RunRecorder is used from one thread at a time.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include "sluice/batch.h"

namespace sluice {

struct RecordHeader {
  std::string script_hash;   // of the pipeline that made the batches, if any
  std::string options_json;  // a JSON object of the options that shape the data
  std::uint64_t seed = 0;
  std::uint32_t rank = 0;
  std::uint32_t world_size = 1;
};

class RunRecorder {
 public:
  // Creates or truncates path and writes the header. Throws Error.
  RunRecorder(const std::string& path, const RecordHeader& header);
  ~RunRecorder();
  RunRecorder(const RunRecorder&) = delete;
  RunRecorder& operator=(const RunRecorder&) = delete;

  // Appends one batch's line. Throws Error if the write fails.
  void record(const Batch& batch);
  // Flushes and closes; throws Error if that fails. The destructor closes too.
  void close();

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
};

// xxHash64 of bytes, the digest used in records.
std::uint64_t digest_bytes(const void* data, std::size_t size);

struct VerifyResult {
  bool identical = false;
  std::uint64_t batches_compared = 0;
  std::string message;  // what differs first, and how; or a summary when identical
};

// Compares two records. Throws Error if a file cannot be read or is not a record.
VerifyResult verify_records(const std::string& a, const std::string& b);

}  // namespace sluice
