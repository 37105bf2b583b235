// sluice/options.h: everything a Loader is built from, in one struct.
//
// A run's settings by name (`sluice run --workers 4`, Python's keywords,
// pipeline.lua) are these fields' names, but for prefetch, which sets slots.
//
// An Options value is plain data plus the Producer that makes batches; copy it,
// change a field, build another Loader. Loader's constructor validates it and
// throws sluice::Error naming the offending option.
#pragma once

#include "sluice/export.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/dtype.h"
#include "sluice/state.h"

namespace sluice {

class Producer;

inline constexpr std::size_t max_fields = 16;       // fields per batch
inline constexpr std::size_t max_sample_dims = 7;   // dimensions per sample (a batch adds one)

// One named output of a sample. A batch of B samples holds each field as one
// contiguous array of shape [B, shape...] (C order).
struct SLUICE_API FieldSpec {
  std::string name;
  DType dtype = DType::f32;
  std::vector<std::int64_t> shape;  // per-sample shape; empty = scalar
  // > 0: a bytes field of variable length (dtype "bytes" in pipeline.lua, for
  // encoded images and raw files): dtype u8, shape {8 + max_bytes}; each
  // sample's row holds its length (uint64, little endian), then its bytes; the
  // rest of the row is unspecified. field_bytes() (sluice/batch.h) reads one.
  std::uint64_t max_bytes = 0;
};

// How ranks share an epoch when the dataset does not divide evenly.
enum class ShardPolicy : std::uint8_t {
  pad,   // every rank gets ceil(N / world) samples; the shortfall repeats the epoch's first samples
  drop,  // every rank gets floor(N / world) samples; the epoch's last N % world samples are skipped
};

// What happens to a sample that keeps failing: one whose producer throws, or
// that crashes or hangs its worker max_retries times.
enum class OnError : std::uint8_t {
  fail,  // stop the run with an error naming the sample
  skip,  // drop the sample from its batch (and every later epoch), report it in Stats
};

// What a batch holds in place of samples that on_error = skip dropped.
enum class SkipFill : std::uint8_t {
  shrink,  // the batch is shorter by that many samples; a batch left empty is not delivered
  repeat,  // the batch keeps batch_size samples: the places of skipped samples are taken by the
           // batch's own surviving samples, in order, cycling (deterministic: same seed, same
           // batch); for compiled models that need fixed shapes
};

// The three policies by the names that settings, pipeline.lua, states and run
// records spell them: "pad"/"drop", "fail"/"skip", "shrink"/"repeat". Every
// reader of such a name parses it here; parse_* give nullopt for any other text.
SLUICE_API const char* name_of(ShardPolicy p);
SLUICE_API const char* name_of(OnError e);
SLUICE_API const char* name_of(SkipFill f);
SLUICE_API std::optional<ShardPolicy> parse_shard_policy(std::string_view name);
SLUICE_API std::optional<OnError> parse_on_error(std::string_view name);
SLUICE_API std::optional<SkipFill> parse_skip_fill(std::string_view name);

// The most workers a Loader runs (workers, and max_workers with auto workers).
inline constexpr std::uint32_t kMaxWorkers = 256;

struct SLUICE_API Options {
  // --- The epoch plan -------------------------------------------------------
  std::uint64_t dataset_size = 0;  // N: samples are the indices [0, N)
  std::uint32_t batch_size = 1;    // B
  bool drop_last = false;          // drop a ragged last batch instead of delivering it short
  bool shuffle = false;            // a fresh permutation per (seed, epoch); O(1) memory
  // With shuffle: 0 shuffles globally; k > 0 keeps shard locality
  // (sluice/shard_shuffle.h): shards are shuffled per epoch and samples only
  // within windows of k consecutive shards. Needs shard_sizes.
  std::uint32_t shuffle_window = 0;
  // Samples per shard, in dataset order (they sum to dataset_size). Set by
  // sources with shards (sluice.tfrecord, .tar, .jsonl; sluice.parquet: its row
  // groups); read with shuffle_window.
  std::vector<std::uint64_t> shard_sizes;
  std::uint64_t seed = 0;
  std::uint32_t epochs = 1;        // 0 = until the loader is destroyed
  std::uint32_t rank = 0;          // this process's shard of every epoch
  std::uint32_t world_size = 1;
  ShardPolicy shard_policy = ShardPolicy::pad;

  // Continue a run from Loader::state() instead of its first batch. The plan
  // (seed, dataset_size, batch_size, shuffle, shuffle_window and the shard
  // layout, drop_last, shard) must match.
  std::optional<LoaderState> resume;
  // What orders the samples besides the plan, where a source does (a
  // mixture: its sources' rows, their shuffle, its weights and phases): a
  // hash of what decides every sample before global position `position`
  // (epoch * dataset_size + position in the epoch). A state records it at
  // its position, and a resume that changes it is refused; a change that
  // starts at or after the resume point (a mixture phase from that row) is
  // not one. Empty: the plan alone orders the samples.
  std::function<std::uint64_t(std::uint64_t position)> order_key;

  // --- What a batch holds ---------------------------------------------------
  std::vector<FieldSpec> fields;
  std::shared_ptr<Producer> producer;  // runs in the workers; see sluice/producer.h

  // --- Workers and memory ---------------------------------------------------
  std::uint32_t workers = 2;       // persistent worker processes, 1 to kMaxWorkers
  std::uint32_t slots = 0;         // batches in flight, prefetched or held; 0 = 2 * workers + 2
                                   // (the run setting `prefetch`: sluice/settings.h)
  // Auto workers: with max_workers > workers, the loader starts `workers` and
  // adds workers at run time (the zygote forks them), up to max_workers, while
  // more workers deliver more batches and the CPUs are not saturated; it keeps
  // the count that delivered most (Stats::workers, Stats::autotune). 0 = fixed.
  // With slots = 0, slots are then sized for max_workers (2 each, plus 2)
  // within memory_budget_mb of arena, which may lower the maximum.
  std::uint32_t max_workers = 0;
  std::uint64_t memory_budget_mb = 1024;  // with max_workers: the arena's slots stay within this
  std::uint64_t slot_bytes = 0;    // bytes per slot; 0 = exactly what the fields need
  bool ordered = true;             // deliver in plan order; false = as batches complete
                                   // (always epoch by epoch)
  std::uint32_t held_timeout_ms = 5000;  // when the consumer holds every slot, next() waits this long
                                         // for one to be released (on another thread), then throws
                                         // an Error that says so; next() works again after a release

  // --- Faults ---------------------------------------------------------------
  // A crashed worker is replaced and its batches re-issued; the consumer sees
  // the same batches as a run without the crash.
  // batch_timeout_ms: a worker that fills one batch longer, or that has batches waiting and shows
  // no sign of life that long (stopped between batches; start-up gets at least 10 s), is killed,
  // replaced, and its batches retried; 0 = never. The default, 10 minutes, is far above any batch
  // of a healthy pipeline, so that a worker stuck in a loop, a deadlock or a stopped process (a
  // dead NFS server, a SIGSTOP) ends in an error naming the sample instead of a hang.
  std::uint32_t batch_timeout_ms = 600'000;
  std::uint32_t max_retries = 3;       // crashes, timeouts or memory kills of one sample in a row
                                       // (a success resets the count) before on_error applies
  std::uint64_t worker_memory_mb = 0;  // a worker whose private memory (RSS less shared pages)
                                       // passes this is killed and replaced; 0 = no limit
  OnError on_error = OnError::fail;
  SkipFill skip_fill = SkipFill::shrink;

  // --- Observing ------------------------------------------------------------
  // Record a timeline for Loader::write_trace(): every worker's last 4096
  // fills (a ring in the arena, 160 KiB per worker) and the consumer's last
  // 65536 events (waits in next(), restarts, skips, slots in use). Bounded
  // however long the run; off, nothing is recorded.
  bool trace = false;
};

}  // namespace sluice
