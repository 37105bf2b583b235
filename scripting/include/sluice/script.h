// sluice/script.h: a pipeline.lua as sluice::Options, for `sluice run` and for
// C++ trainers alike.
//
//   sluice::Script script = sluice::load_script({.path = "pipeline.lua"});
//   sluice::Loader loader(script.options);
//   while (auto batch = loader.next()) train(*batch);
//
// load_script runs pipeline.lua once in the calling process, on a Lua state it
// closes before returning: it reads the pipeline, infers the fields from sample
// 0 if they are not declared, and makes sample 0 once so that a broken map
// fails here, before any worker exists (with on_error = skip, a failing sample
// 0 is skipped by the workers, and the next of the first 16 samples that works
// stands in for it here; a note says so). A field of more than 2^40 bytes per
// sample is an error here. The Producer it puts in the Options
// creates a fresh LuaJIT state in every worker (after fork) and runs the script
// there again; workers share no Lua state and take no lock.
//
// What comes from the script and must not be edited in the returned Options:
// dataset_size, fields, seed (the seed also keys ctx.rng inside the workers;
// override it through ScriptOptions::seed). Everything else (batch_size,
// workers, slots, epochs, ordered, ...) may be changed before building a Loader.
//
// Errors: load_script throws sluice::Error with one message naming the script
// and line (syntax errors, a failing map with its traceback, wrong dtypes or
// shapes, a map that returns nothing, bad options). A failure inside a worker
// reaches Loader::next() as sluice::Error carrying the same kind of message.
//
// Thread safety: load_script may be called from any thread; a Script is plain
// data plus counters that worker processes update atomically.
#pragma once

#include "sluice/export.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sluice/options.h"

namespace sluice {

namespace detail {
class FillCounters;
}
namespace scripting {
class DataSource;
}

// workers = "auto": start with the usable cores and let the loader add
// workers while that raises throughput (Options::max_workers =
// kAutoMaxWorkers, or the cores where there are more: a worker that waits
// costs a process, not a core). Streaming sources partition their shards by
// worker, so they keep a fixed count (the cores, at most one per shard).
inline constexpr std::uint32_t kAutoWorkers = 0;
inline constexpr std::uint32_t kAutoMaxWorkers = 64;

// Options::workers == kAutoWorkers: sets workers to the usable cores and
// max_workers as above. Other counts are left as they are.
SLUICE_API void resolve_auto_workers(Options& options);

// Which script to load, and overrides of what it says (unset: the script's value).
struct SLUICE_API ScriptOptions {
  std::string path = {};                   // the pipeline.lua
  std::optional<std::uint32_t> epochs = std::nullopt;     // 0 = until the loader is destroyed
  std::optional<std::uint32_t> workers = std::nullopt;    // >= 1, or kAutoWorkers
  std::optional<std::uint32_t> prefetch = std::nullopt;   // batch slots in flight; 0 = runtime default
  std::optional<std::uint64_t> seed = std::nullopt;       // < 2^53 (seeds are Lua numbers)
  // shuffle as pipeline.lua's `shuffle` would: a mixture's sources' rows are
  // shuffled, its schedule (the plan's order) never is.
  std::optional<bool> shuffle = std::nullopt;
  std::optional<std::uint32_t> shuffle_window = std::nullopt;  // 0: the global shuffle
  // on_error also decides the trial at load: with skip, a failing sample 0 does
  // not stop it (the next samples are tried, at most 16), and the workers skip it.
  std::optional<OnError> on_error = std::nullopt;
  // Remote sources (s3://, http(s)://): the node cache's directory and its
  // budget in MiB (0 = no limit), and each request's retries
  // and stall timeout. Unset: SLUICE_CACHE_LIMIT's bytes, 6, 30000.
  std::optional<std::string> cache_dir = std::nullopt;  // unset: remote::default_cache_dir()
  std::optional<std::uint64_t> cache_limit_mb = std::nullopt;
  std::optional<std::uint32_t> remote_retries = std::nullopt;
  std::optional<std::uint32_t> remote_timeout_ms = std::nullopt;
  // Remote shards fetched by the workers: MiB each fetches ahead of its reads
  // (unset: 256).
  std::optional<std::uint64_t> remote_prefetch_mb = std::nullopt;
  // Options::batch_timeout_ms, and the load's trial: made first in a child
  // process, which is stopped past it (unset: Options' default; 0: never).
  std::optional<std::uint32_t> batch_timeout_ms = std::nullopt;
};

// Where the workers' time went, summed over every worker of every Loader built
// from the Script's Options.
struct SLUICE_API ScriptWorkerTimes {
  std::uint64_t start_ns = 0;  // creating each worker's Lua state and running pipeline.lua
  std::uint64_t fill_ns = 0;   // making batches: source, map, map_batch, checks, copies
  std::uint64_t batches = 0;   // batches made
  std::uint64_t samples = 0;   // samples made
  std::uint32_t workers = 0;   // workers that started
  // sluice.parquet: row groups decoded (each worker decodes the groups its
  // batches read; a group read again after leaving its reader's cache counts again)
  std::uint64_t row_groups_decoded = 0;
  // sluice.parquet without a map: rows copied into batches by gathering them
  // from their row group column by column (rows not in a run of consecutive
  // rows: a shuffled batch's)
  std::uint64_t parquet_rows_gathered = 0;
};

// One remote object downloaded at load or by a worker (steady_clock times), for --trace.
struct SLUICE_API ScriptDownload {
  std::string url;
  std::uint64_t start_ns = 0, end_ns = 0;
  std::uint64_t bytes = 0;
};

// What a native source's remote objects (s3://, https://) took to fetch into
// the node cache (when the script was loaded, and by the workers as they
// went: Script::remote_stats); all zero for local data.
struct SLUICE_API ScriptRemoteStats {
  std::uint64_t objects = 0;    // remote objects the source names
  std::uint64_t hits = 0;       // found whole in the cache (or fetched meanwhile by another process)
  std::uint64_t misses = 0;     // downloaded by this process
  std::uint64_t evictions = 0;  // objects it evicted to stay within cache_limit_mb
  std::uint64_t requests = 0;   // HTTP requests for data (GETs), retries included
  std::uint64_t retries = 0;
  std::uint64_t bytes = 0;      // body bytes received
  std::uint64_t wait_ns = 0;    // waiting on the network and on other processes' downloads
  std::uint64_t revalidated = 0;  // found in the cache and checked with the store (one HEAD each)
  std::uint64_t changed = 0;      // of those, changed in the store and downloaded again
  // Shards the workers fetch themselves (indexed TFRecord or tar with
  // indexes beside it): how long the workers' reads waited for them, and the most
  // bytes the cache held past cache_limit_mb when a shard a batch needed
  // found everything else in use.
  std::uint64_t worker_shards = 0;   // shards left to the workers (0: all fetched at load)
  std::uint64_t worker_wait_ns = 0;
  std::uint64_t over_budget = 0;
  std::vector<ScriptDownload> downloads;  // each download, in the order they finished
  std::uint64_t cache_limit = 0;          // the node cache's budget in bytes (0: none)
};

struct SLUICE_API Script {
  Options options;                 // ready for sluice::Loader
  std::string path;                // the script, as named in ScriptOptions
  std::string text;                // its contents, read once at load: what every worker of the run runs
  std::string device;              // where batches are delivered: "cpu"
  std::vector<std::string> notes;  // worth telling the user: inferred fields, device fallback
  // Of the notes, those that say data was left out at load under on_error =
  // "skip" (a damaged shard read up to the damage, a cut compressed file's
  // whole lines): Python warns of each; they are not among the run's skipped
  // samples, which count what the workers passed over.
  std::vector<std::string> left_out;
  ScriptRemoteStats remote;        // the source's downloads at load

  // The load's downloads and, for shards the workers fetch, the workers'
  // (summed from shared memory up to each worker's last batch); valid while
  // the Script lives.
  ScriptRemoteStats remote_stats() const;

  // Reads the workers' counters (shared memory); valid while the Script lives.
  ScriptWorkerTimes worker_times() const;

  // What the pipeline's native source knows of dataset sample `id` (as in
  // Batch::sample_ids()), for showing samples to a person: the file it lies in
  // ("train/cat/1.jpg", "shard.tar at byte 1536", "x.npy row 7"), or "" where
  // the source cannot say (sluice.range, streaming sources); its class index
  // with sluice.folders, else -1. classes(): sluice.folders' class names by
  // label (its sorted sub-folders), empty for other sources.
  std::string sample_file(std::uint64_t id) const;
  std::int64_t sample_label(std::uint64_t id) const;
  std::vector<std::string> classes() const;

  std::shared_ptr<const detail::FillCounters> counters;
  std::shared_ptr<const scripting::DataSource> source;  // null for sluice.range
};

// Loads and checks a pipeline.lua. Throws Error.
SLUICE_API Script load_script(const ScriptOptions& options);

}  // namespace sluice
