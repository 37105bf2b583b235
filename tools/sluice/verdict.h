// verdict.h: what bounds a pipeline, judged from a finished run's measures.
//
// Workers' fill time is split by where it went: on a CPU (process CPU time),
// waiting for a CPU (run queue), or off-CPU (I/O, sleeps). A pipeline whose
// fills are mostly CPU work is compute-bound (a cheaper map, or more cores);
// one whose fills mostly wait goes faster with more workers, and the verdict
// says how many to try.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sluice::cli {

struct RunMeasures {
  double wall_s = 0;             // the run loop, first next() to the last
  std::uint64_t batches = 0;     // delivered
  std::uint32_t workers = 1;
  std::uint32_t slots = 0;       // batch slots (the prefetch depth)
  bool slots_given = false;      // the prefetch was set, not the default 2 x workers + 2
  std::uint32_t cores = 1;       // usable by this process
  std::uint64_t fill_ns = 0;     // summed over workers
  std::uint64_t cpu_ns = 0;      // of fill_ns, on a CPU
  std::uint64_t runqueue_ns = 0; // of fill_ns, runnable and waiting for a CPU
  std::uint64_t consumer_wait_ns = 0;
  std::uint64_t slots_full_ns = 0;
  std::uint64_t network_wait_ns = 0;  // at load, fetching remote objects into the node cache
  std::uint64_t network_bytes = 0;    // downloaded then
  std::uint64_t network_downloads = 0;    // objects downloaded then
  std::uint64_t network_revalidated = 0;  // objects found in the cache and checked with the store
  bool workers_tuned = false;  // --workers auto chose the count, by measuring the run
};

// CPUs this process may run on (sched_getaffinity), at least 1.
std::uint32_t usable_cores();

// The share of the fills' wall time spent on a CPU or waiting for one; 1 when
// nothing was filled.
double cpu_share(const RunMeasures& m);

// Workers to try for a pipeline whose fills wait: enough to overlap the waits
// until the CPUs would be busy, at most 8 per core; more than m.workers.
std::uint32_t suggested_workers(const RunMeasures& m);

// Configuration that works against the pipeline (more workers than cores for
// CPU work, unless --workers auto measured them faster; fewer slots than
// workers), one sentence each.
std::vector<std::string> run_warnings(const RunMeasures& m);

// One line: "network-bound: ..." (the downloads at load, or the checks of
// cached objects with the store when nothing was downloaded, took longer
// than the run), "consumer-bound: ...", "compute-bound: ...", "waiting: ...",
// "CPU-contended: ..." (workers short of their fill time while their fills
// wait for a CPU: other processes compete for the cores), "delivery-bound:
// ..." or, for a run too short to judge, "none: ...".
std::string verdict(const RunMeasures& m);

}  // namespace sluice::cli
