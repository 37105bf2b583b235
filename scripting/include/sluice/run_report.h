// sluice/run_report.h: what a run of a pipeline.lua writes besides its
// batches, the same for `sluice run` and for Python's sluice.Loader: the run
// record's header (sluice/record.h) and the report of skipped samples.
//
//   sluice::RunRecorder recorder(path, sluice::record_header(script));
//   sluice::SkipReport skips("", &recorder);          // no skip log, skips into the record
//   while (auto batch = loader.next()) { recorder.record(*batch); skips.update(loader.stats()); }
//
// Thread safety: a SkipReport is used from one thread at a time.
#pragma once

#include <cstdio>
#include <string>

#include "sluice/loader.h"
#include "sluice/record.h"
#include "sluice/script.h"

namespace sluice {

// The fields, as "image float32[3,32,32], label int64[]".
SLUICE_API std::string describe_fields(const Options& options);

// A run record's header for a loaded script: the digest of the script's file,
// the options that shape the data, the seed and the shard. Throws Error if the
// script cannot be read.
SLUICE_API RecordHeader record_header(const Script& script);

// A whole file's bytes; throws Error naming the file.
SLUICE_API std::string read_text_file(const std::string& path);

// Skipped samples, written to the run record and the skip log once each, as
// the run finds them.
class SLUICE_API SkipReport {
 public:
  // log_path: one JSON line per skipped sample (skip_json), or "" for none;
  // recorder: where record_skip goes, or nullptr. Throws Error if the log
  // cannot be created.
  SkipReport(const std::string& log_path, RunRecorder* recorder);
  ~SkipReport();
  SkipReport(const SkipReport&) = delete;
  SkipReport& operator=(const SkipReport&) = delete;

  // Writes the skips of `stats` not written yet (the log line by line,
  // flushed). Throws Error if a write fails.
  void update(const Stats& stats);

 private:
  std::string path_;
  RunRecorder* recorder_;
  std::FILE* log_ = nullptr;
  std::size_t written_ = 0;
};

}  // namespace sluice
