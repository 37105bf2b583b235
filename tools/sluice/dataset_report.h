// dataset_report.h: a written dataset (DIR/manifest.json, sluice/io/manifest.h)
// for `sluice inspect DIR` and `sluice verify DIR`.
#pragma once

#include <string>

namespace sluice::cli {

// Whether `dir` holds a manifest.json.
bool is_written_dataset(const std::string& dir);

// Prints the manifest's summary: format, shards, samples, bytes, fields, and
// whether the conversion is complete. Throws sluice::Error.
void inspect_dataset(const std::string& dir);

// Checks every listed shard's size and checksum, and that the folder holds no
// shard-like file the manifest does not list (*.tar, *.tfrecord, *.idx,
// *.tmp, shard-*; while the conversion is incomplete, what the stopped writer
// left is allowed); prints each mismatch and stray file and a verdict.
// Returns 0 when all match, 1 otherwise. Throws sluice::Error when
// the manifest cannot be read.
int verify_dataset(const std::string& dir);

}  // namespace sluice::cli
