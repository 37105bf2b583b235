#include "autotune.h"

#include <algorithm>
#include <cstdio>

namespace sluice::detail {

AutoTuner::AutoTuner(std::uint32_t start, std::uint32_t max, std::uint32_t cores)
    : workers_(start), max_(std::max(start, max)), cores_(std::max(1u, cores)), tried_{start} {
  if (workers_ >= max_) settle(workers_, "the maximum, " + std::to_string(max_));
}

std::string AutoTuner::path() const {
  std::string text;
  for (std::uint32_t n : tried_) text += (text.empty() ? "" : " -> ") + std::to_string(n);
  return text + " workers";
}

std::string AutoTuner::summary() const { return settled_ ? summary_ : path() + " so far"; }

void AutoTuner::settle(std::uint32_t keep, const std::string& why) {
  settled_ = true;
  workers_ = keep;
  summary_ = path() + ", kept " + std::to_string(keep) + " (" + why + ")";
}

std::uint32_t AutoTuner::stop_at(std::uint32_t workers, const std::string& why) {
  settle(workers, why);
  return workers_;
}

std::uint32_t AutoTuner::observe(const TuneSample& s, bool starting) {
  if (settled_) return workers_;
  if (!started_) {  // the first batch: start-up is behind us
    started_ = true;
    base_ = s;
    measure_from_ns_ = s.now_ns;
    return workers_;
  }
  if (starting) measure_from_ns_ = std::max(measure_from_ns_, s.now_ns + kSettleNs);
  if (s.now_ns <= measure_from_ns_) {  // new workers still starting
    base_ = s;
    return workers_;
  }
  const std::uint64_t span = s.now_ns - base_.now_ns;
  const std::uint64_t batches = s.batches - base_.batches;
  if (span < kWindowNs || batches < 4ull * workers_) return workers_;

  const double seconds = static_cast<double>(span) / 1e9;
  const double rate = static_cast<double>(batches) / seconds;
  const double cpu = static_cast<double>(s.worker_cpu_ns - base_.worker_cpu_ns) / 1e9 / seconds / cores_;
  const double waited = static_cast<double>(s.consumer_wait_ns - base_.consumer_wait_ns) / 1e9 / seconds;
  base_ = s;

  char text[96];
  if (last_workers_ != 0 && rate < last_rate_ * kGain) {
    std::snprintf(text, sizeof text, "x%.2f over %u: no more gain", rate / last_rate_, last_workers_);
    settle(rate >= last_rate_ ? workers_ : last_workers_, text);
    return workers_;
  }
  if (waited < kWaitShare) {
    std::snprintf(text, sizeof text, "the consumer waited %.0f%% of the time: not bound by workers", waited * 100);
    settle(workers_, text);
    return workers_;
  }
  if (cpu >= kCpuShare) {
    std::snprintf(text, sizeof text, "workers used %.0f%% of %u cores", cpu * 100, cores_);
    settle(workers_, text);
    return workers_;
  }
  if (workers_ >= max_) {
    settle(workers_, "the maximum, " + std::to_string(max_));
    return workers_;
  }
  last_rate_ = rate;
  last_workers_ = workers_;
  workers_ = std::min(max_, workers_ * 2);
  tried_.push_back(workers_);
  measure_from_ns_ = s.now_ns + kSettleNs;
  return workers_;
}

}  // namespace sluice::detail
