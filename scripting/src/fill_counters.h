// fill_counters.h: worker timings in memory shared with the launching process.
//
// The counters live in an anonymous MAP_SHARED mapping made in the launching
// process before the Loader forks, so every worker inherits the same pages and
// adds to them with relaxed atomic increments; the launching process reads
// them at any time. Totals are monotonic sums and nothing is ordered against
// them, so relaxed ordering suffices.
//
// Thread and process safety: add_* may be called from any worker concurrently;
// totals() from anywhere.
#pragma once

#include <atomic>
#include <cstdint>

#include "sluice/script.h"

namespace sluice::detail {

class FillCounters {
 public:
  FillCounters();  // throws Error if the mapping fails
  ~FillCounters();
  FillCounters(const FillCounters&) = delete;
  FillCounters& operator=(const FillCounters&) = delete;

  void add_start(std::uint64_t ns) const;
  void add_fill(std::uint64_t ns, std::uint64_t samples) const;
  // sluice.parquet: row groups decoded and rows gathered since the last report.
  void add_parquet(std::uint64_t groups_decoded, std::uint64_t rows_gathered) const;
  ScriptWorkerTimes totals() const;

  // Lazy remote shards (record_feed.h): what a worker's fetching added since
  // its last report (counts, bytes, ns), and each download it finished, by
  // the shard's number in the source's list (the first kDownloads of all).
  void add_remote(const ScriptRemoteStats& delta, std::uint64_t over_budget) const;
  void add_download(std::uint32_t object, std::uint64_t start_ns, std::uint64_t end_ns, std::uint64_t bytes) const;
  // Sums over the workers; downloads' url is the shard's number in decimal
  // (the caller names it), objects is 0.
  ScriptRemoteStats remote_totals() const;

 private:
  struct alignas(64) Shared {
    std::atomic<std::uint64_t> start_ns;
    std::atomic<std::uint64_t> fill_ns;
    std::atomic<std::uint64_t> batches;
    std::atomic<std::uint64_t> samples;
    std::atomic<std::uint64_t> workers;
    std::atomic<std::uint64_t> row_groups_decoded;
    std::atomic<std::uint64_t> parquet_rows_gathered;
    // remote
    std::atomic<std::uint64_t> hits, misses, evictions, requests, retries, bytes, wait_ns, worker_wait_ns,
        over_budget;
    std::atomic<std::uint64_t> downloads;  // slots claimed in download[]
  };
  // One download: `object` is the shard's number + 1, stored last with
  // release after the other fields (0: being written, skipped by readers).
  struct Download {
    std::atomic<std::uint64_t> object, start_ns, end_ns, bytes;
  };
  static constexpr std::uint64_t kDownloads = 16384;
  struct RemoteSum {
    std::atomic<std::uint64_t> Shared::*counter;
    std::uint64_t ScriptRemoteStats::*field;
  };
  static const RemoteSum kRemoteSums[];
  static_assert(std::atomic<std::uint64_t>::is_always_lock_free,
                "cross-process counters need lock-free 64-bit atomics");
  Shared* shared_;
  Download* download_;  // kDownloads of them, in the same mapping after *shared_
};

}  // namespace sluice::detail
