// autotune.h: how many workers an auto loader (Options::max_workers) runs.
//
// The tuner sees the run in windows of at least kWindowNs and 4 batches per
// worker, and decides after each: it starts at the loader's `workers` (the
// core count for workers = "auto") and doubles the count while
//   - the consumer waited for batches in the window (at least kWaitShare of
//     it): the workers, not the consumer, bound the run;
//   - the workers' CPU time stayed below kCpuShare of the usable cores: a
//     CPU-bound map gains nothing from more processes than cores;
//   - the last doubling raised throughput by at least kGain;
//   - and the maximum allows it.
// When a doubling did not pay, it keeps whichever of the two counts delivered
// more and stops for good. After a change, measuring waits until every new
// worker has started its producer (a LuaJIT state and the pipeline script,
// which takes a while for 32 workers on 2 cores), and kSettleNs more.
//
// Growing only changes which workers the scheduler gives batches to; a batch
// is a pure function of the plan, so the batches are the same whatever the
// tuner decides.
//
// Thread safety: none; the consumer's thread only (inside next()).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sluice::detail {

struct TuneSample {
  std::uint64_t now_ns = 0;
  std::uint64_t batches = 0;           // delivered so far
  std::uint64_t worker_cpu_ns = 0;     // summed over workers, so far
  std::uint64_t consumer_wait_ns = 0;  // so far
};

class AutoTuner {
 public:
  static constexpr std::uint64_t kWindowNs = 300'000'000;
  static constexpr std::uint64_t kSettleNs = 150'000'000;
  static constexpr double kWaitShare = 0.10;
  static constexpr double kCpuShare = 0.85;
  static constexpr double kGain = 1.10;

  AutoTuner(std::uint32_t start, std::uint32_t max, std::uint32_t cores);

  // After each delivered batch; `starting`: some worker has not finished its
  // start-up yet. Returns the worker count to use from now on.
  std::uint32_t observe(const TuneSample& s, bool starting = false);

  // Stops tuning at `workers` (fewer than asked for could be started);
  // returns it.
  std::uint32_t stop_at(std::uint32_t workers, const std::string& why);
  std::uint32_t workers() const { return workers_; }
  bool settled() const { return settled_; }
  // "2 -> 4 -> 8 workers, kept 8 (x1.04 over 4: no more gain)", or while it
  // still measures "2 -> 4 workers so far".
  std::string summary() const;

 private:
  void settle(std::uint32_t keep, const std::string& why);
  std::string path() const;

  std::uint32_t workers_, max_, cores_;
  bool settled_ = false;
  bool started_ = false;
  std::uint64_t measure_from_ns_ = 0;
  TuneSample base_;
  double last_rate_ = 0;          // batches/s of the previous window, at last_workers_
  std::uint32_t last_workers_ = 0;
  std::vector<std::uint32_t> tried_;
  std::string summary_;
};

}  // namespace sluice::detail
