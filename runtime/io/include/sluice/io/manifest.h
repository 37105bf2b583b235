// sluice/io/manifest.h: the manifest of a written dataset (DIR/manifest.json).
//
// `sluice write` and sluice.write() leave, beside the shards, one JSON file
// that lists every completed shard with its sample count, byte size and
// checksum ("xxh3:<16 hex digits>", XXH3-64 of the whole file), and the
// fields' dtypes, shapes and member extensions:
//
//   {"format": "sluice-dataset", "version": 1, "shard_format": "tar",
//    "checksum": "xxh3", "complete": true, "samples": 1000,
//    "cut": {"samples": 256} | {"bytes": 268435456},
//    "resume": {"batch": 3, "row": 232},
//    "plan": {"dataset_size": "1000", "seed": "0", "shuffle": "false", ...},
//    "fields": [{"name": "jpg", "dtype": "bytes", "shape": [], "ext": "jpg"}, ...],
//    "shards": [{"name": "shard-000000.tar", "samples": 256, "bytes": 1234,
//                "checksum": "xxh3:0123456789abcdef"}, ...]}
//
// The manifest is rewritten (atomically: see output_file.h) after each shard
// is published, so it lists only whole shards; "complete" is true once the
// last one is. "resume" is the plan position (batch, row within it) of the
// first sample not yet in a listed shard. "plan" records what decides which
// samples go where (batch_writer.h write_plan(): the epoch plan and the
// pipeline's hash; never the worker count), so that a resume with another
// plan is refused instead of mixing two orders; manifests from before it have
// no "plan" (read as an empty one).
//
// Readers (TarSource, TFRecordSource, and the streaming TarStream and
// TFRecordStream) look for a manifest beside a shard and, when it lists the
// shard, check its size and checksum the first time the shard is opened in a
// process (verify_listed_shard: one extra read of the shard, which leaves it
// in the page cache for the read that follows). A remote shard (s3://,
// https://) is checked against the manifest beside it in the store before
// the node cache publishes its download (scripting's remote_manifest.h).
//
// Errors: sluice::Error naming the manifest or the shard. Thread safety: the
// functions are reentrant; verify_listed_shard keeps a process-wide memo
// under a mutex.
#pragma once

#include "sluice/export.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace sluice::io {

struct SLUICE_API ManifestField {
  std::string name;
  std::string dtype;                // "uint8", "float32", ... or "bytes" (variable length)
  std::vector<std::int64_t> shape;  // per sample; empty for scalars and bytes
  std::string ext;                  // the tar member extension
  bool operator==(const ManifestField&) const = default;
};

struct SLUICE_API ManifestShard {
  std::string name;  // file name within the dataset folder
  std::uint64_t samples = 0;
  std::uint64_t bytes = 0;
  std::string checksum;
};

struct SLUICE_API Manifest {
  std::string shard_format;  // "tar" or "tfrecord"
  std::string checksum = "xxh3";
  bool complete = false;
  std::uint64_t cut_samples = 0;  // one of the two is set: samples per shard,
  std::uint64_t cut_bytes = 0;    // or the most bytes per shard
  std::uint64_t resume_batch = 0, resume_row = 0;
  std::map<std::string, std::string> plan;  // name -> value; empty: not recorded
  std::vector<ManifestField> fields;
  std::vector<ManifestShard> shards;

  std::uint64_t samples() const;
  std::uint64_t bytes() const;
  std::string to_json() const;
  // Throws naming `where` and the key that is wrong.
  static Manifest from_json(const std::string& text, const std::string& where);
};

inline constexpr const char* kManifestName = "manifest.json";

// DIR/manifest.json, or nullopt when there is none.
SLUICE_API std::optional<Manifest> read_manifest(const std::string& dir);
SLUICE_API void write_manifest(const std::string& dir, const Manifest& manifest);

// Checks one shard against its entry: size, then checksum. Returns "" when it
// matches, else why not ("DIR/shard-000001.tar: checksum xxh3:... does not
// match the manifest's xxh3:..."; "... is missing"; "... has N bytes, ...").
SLUICE_API std::string check_shard(const std::string& dir, const ManifestShard& shard);
// The same for a file elsewhere (a downloaded object before it is
// published), named `name` in the reason (its URL).
SLUICE_API std::string check_shard_file(const std::string& path, const ManifestShard& shard,
                                        const std::string& name);

// For readers: when the folder of `shard_path` has a manifest that lists it,
// checks it (once per process per path) and throws sluice::Error with
// check_shard's reason, naming the shard as corrupt. Otherwise does nothing.
SLUICE_API void verify_listed_shard(const std::string& shard_path);

}  // namespace sluice::io
