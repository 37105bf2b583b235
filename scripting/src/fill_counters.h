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
  void add_row_groups_decoded(std::uint64_t n) const;
  ScriptWorkerTimes totals() const;

 private:
  struct alignas(64) Shared {
    std::atomic<std::uint64_t> start_ns;
    std::atomic<std::uint64_t> fill_ns;
    std::atomic<std::uint64_t> batches;
    std::atomic<std::uint64_t> samples;
    std::atomic<std::uint64_t> workers;
    std::atomic<std::uint64_t> row_groups_decoded;
  };
  static_assert(std::atomic<std::uint64_t>::is_always_lock_free,
                "cross-process counters need lock-free 64-bit atomics");
  Shared* shared_;
};

}  // namespace sluice::detail
