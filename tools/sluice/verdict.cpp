#include "verdict.h"

#include <sched.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <thread>

namespace sluice::cli {

namespace {

// Below these a run says more about start-up than about the pipeline.
constexpr double kMinJudgedSeconds = 0.5;
constexpr std::uint64_t kMinJudgedBatches = 10;
// The consumer waiting less than this share of the run: the pipeline keeps up.
constexpr double kConsumerBound = 0.15;
// Workers filling at least this share of their time: they are what bounds it.
constexpr double kWorkersBusy = 0.75;
// Fills with less than this share on (or waiting for) a CPU mostly wait.
constexpr double kMostlyWaiting = 0.5;
// Workers' fills that waited for a CPU this share of their time are contended.
constexpr double kContended = 0.3;

double seconds(std::uint64_t ns) { return static_cast<double>(ns) / 1e9; }

std::string format(const char* fmt, auto... args) {
  char text[512];
  std::snprintf(text, sizeof text, fmt, args...);
  return text;
}

}  // namespace

std::uint32_t usable_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

double cpu_share(const RunMeasures& m) {
  if (m.fill_ns == 0) return 1.0;
  return std::min(1.0, static_cast<double>(m.cpu_ns + m.runqueue_ns) / static_cast<double>(m.fill_ns));
}

// A worker filling all the time uses cpu_share() of a core: the CPUs are busy
// at cores / share workers. Workers scale a waiting pipeline about linearly
// (workers / share of them would fill as fast as CPU work alone allows), so
// try the smaller of the two, at most 8 per core (memory: each worker is a
// process with its own Lua state).
std::uint32_t suggested_workers(const RunMeasures& m) {
  const double share = std::max(cpu_share(m), 1e-3);
  const double by_cpu = m.cores / share;
  const double by_wait = m.workers / share;
  const double cap = 8.0 * m.cores;
  const double n = std::ceil(std::min({by_cpu, by_wait, cap}));
  return std::max<std::uint32_t>(m.workers + 1, static_cast<std::uint32_t>(n));
}

std::vector<std::string> run_warnings(const RunMeasures& m) {
  std::vector<std::string> out;
  const bool measured = m.wall_s >= kMinJudgedSeconds && m.batches >= kMinJudgedBatches && m.fill_ns > 0;
  const bool waits = measured && cpu_share(m) < kMostlyWaiting;
  // (A count the tuner kept was measured faster than the one below it: on
  // a machine other processes load, more workers take a larger share of
  // it. Its summary line says so; this one would contradict it.)
  if (m.workers > m.cores && !waits && !m.workers_tuned) {
    out.push_back(format("%u workers on %u cores: workers beyond the cores help only maps that wait (I/O, "
                         "sleeps); CPU-bound maps just take turns on the cores, each worker a process with "
                         "its own memory (try --workers %u)",
                         m.workers, m.cores, m.cores));
  }
  if (m.slots < m.workers) {
    out.push_back(format("%u slots for %u workers: at most %u workers can fill at once, the others stay "
                         "idle (raise --prefetch to at least %u)",
                         m.slots, m.workers, m.slots, 2 * m.workers + 2));
  }
  return out;
}

std::string verdict(const RunMeasures& m) {
  const double network = seconds(m.network_wait_ns);
  if (network > std::max(m.wall_s, kMinJudgedSeconds) && m.network_downloads == 0) {
    if (m.network_revalidated == 0) {
      // Another process on the node downloaded them meanwhile (one download per node).
      return format("network-bound: waiting %.2f s before the first batch for other processes sharing the node "
                    "cache to download the objects (each is fetched once per node), longer than the run (%.2f s)",
                    network, m.wall_s);
    }
    // Every object was in the cache: the time went to asking the store
    // whether each had changed, as every run that opens them does.
    return format("network-bound: checking %llu cached object%s with the store took %.2f s before the first "
                  "batch, longer than the run (%.2f s); nothing was downloaded. Every run checks them again: "
                  "fewer, larger objects (shards) or a store closer to this machine cut it",
                  static_cast<unsigned long long>(m.network_revalidated), m.network_revalidated == 1 ? "" : "s",
                  network, m.wall_s);
  }
  if (network > std::max(m.wall_s, kMinJudgedSeconds)) {
    return format("network-bound: fetching %.1f MB of remote objects into the node cache took %.2f s (%.1f MB/s) "
                  "before the first batch, longer than the run (%.2f s): the next run reads them from the warm "
                  "cache; a faster link or a cache_limit_mb that holds the data set keeps it so",
                  static_cast<double>(m.network_bytes) / 1e6, network,
                  static_cast<double>(m.network_bytes) / 1e6 / std::max(network, 1e-9), m.wall_s);
  }
  if (m.wall_s < kMinJudgedSeconds || m.batches < kMinJudgedBatches) {
    return format("none: the run was too short to judge (%.2f s, %llu batch%s; a verdict needs at least "
                  "%.1f s and %llu batches, start-up dominates below that): run more --epochs or --batches",
                  m.wall_s, static_cast<unsigned long long>(m.batches), m.batches == 1 ? "" : "es",
                  kMinJudgedSeconds, static_cast<unsigned long long>(kMinJudgedBatches));
  }
  const double wall = std::max(m.wall_s, 1e-9);
  const double busy = std::min(1.0, seconds(m.fill_ns) / (wall * m.workers));
  const double waited = std::min(1.0, seconds(m.consumer_wait_ns) / wall);
  const double fill = std::max(1e-9, seconds(m.fill_ns));
  const double on_cpu = std::min(1.0, seconds(m.cpu_ns) / fill);
  const double runqueue = std::min(1.0 - on_cpu, seconds(m.runqueue_ns) / fill);
  const double cores_used = seconds(m.cpu_ns) / wall;

  if (waited < kConsumerBound) {
    return format("consumer-bound: batches were ready before they were asked for (the consumer waited "
                  "%.0f%% of the run); this pipeline can feed a faster trainer",
                  waited * 100);
  }
  if (busy < kWorkersBusy && runqueue >= kContended) {
    // Workers that wait for a CPU finish their batches late and out of turn:
    // the slots fill with batches the consumer cannot take yet, and others
    // idle. More slots or workers only add to the queue for the cores.
    return format("CPU-contended: the consumer waited %.0f%% of the run while workers filled %.0f%% of theirs, "
                  "and their fills waited for a CPU %.0f%% of the time (on one %.0f%%, using %.1f of %u cores): "
                  "other processes compete for these cores; prefetch and more workers do not help, fewer "
                  "busy processes (or more cores) would",
                  waited * 100, busy * 100, runqueue * 100, on_cpu * 100, cores_used, m.cores);
  }
  if (busy < kWorkersBusy) {
    const double full = std::min(1.0, seconds(m.slots_full_ns) / wall);
    if (full >= 0.3) {
      return format("delivery-bound: the consumer waited %.0f%% of the run while workers filled only %.0f%% "
                    "of theirs, and all %u slots were taken %.0f%% of the time: try a larger --prefetch "
                    "(now %u)",
                    waited * 100, busy * 100, m.slots, full * 100, m.slots);
    }
    return format("delivery-bound: the consumer waited %.0f%% of the run while workers filled only %.0f%% "
                  "of theirs, with free slots: batches were slow to reach the consumer (worker start-up, "
                  "or hand-off); a longer run shows whether it lasts",
                  waited * 100, busy * 100);
  }
  if (on_cpu + runqueue < kMostlyWaiting) {
    const std::uint32_t n = suggested_workers(m);
    std::string text = format("waiting: workers filled %.0f%% of their time, but their fills were %.0f%% "
                              "off-CPU (I/O, sleeps; %.0f%% on a CPU), using %.1f of %u cores; more workers "
                              "would overlap the waits: try --workers %u",
                              busy * 100, (1.0 - on_cpu - runqueue) * 100, on_cpu * 100, cores_used, m.cores, n);
    if (m.slots_given && m.slots < 2 * n + 2) text += format(" with --prefetch %u", 2 * n + 2);
    return text;
  }
  const bool saturated = runqueue >= 0.2 || cores_used >= 0.85 * m.cores || m.workers >= m.cores;
  if (saturated) {
    return format("compute-bound: workers filled %.0f%% of their time, on a CPU %.0f%% of it and waiting for "
                  "one %.0f%%, using %.1f of %u cores: the CPUs are saturated; only a cheaper map (or more "
                  "cores) would go faster",
                  busy * 100, on_cpu * 100, runqueue * 100, cores_used, m.cores);
  }
  return format("compute-bound: workers filled %.0f%% of their time, on a CPU %.0f%% of it, using %.1f of %u "
                "cores; more workers (up to --workers %u) or a cheaper map would go faster",
                busy * 100, on_cpu * 100, cores_used, m.cores, m.cores);
}

}  // namespace sluice::cli
