// sluice/loader.h: the consumer's side of the runtime.
//
// A Loader creates a shared-memory arena of `slots` batch slots, forks a
// single-threaded zygote, and has the zygote fork `workers` persistent worker
// processes. Workers fill slots in place; the Loader hands them out as Batch
// objects in plan order (or in completion order when ordered = false), each
// sample exactly once per epoch. A slot returns to the pool when its Batch is
// released, which is what bounds prefetch and gives backpressure.
//
//   sluice::Loader loader(options);
//   while (auto batch = loader.next()) train(*batch);          // pull, whole run
//   for (sluice::Batch& batch : loader.epoch()) train(batch);  // pull, one epoch
//   loader.run([](sluice::Batch& batch) { train(batch); });    // push
//
// Construct the Loader before the host starts threads where possible: the
// zygote is a copy of the process at that moment, and the workers are forked
// from the zygote, which never runs a second thread. The zygote and workers
// live as long as the Loader or the host process, whichever ends first; the
// constructing thread may exit. Any number of Loaders may exist at once.
//
// Thread safety: next(), epoch() and run() must be called from one thread at a
// time. Batches may be released on any thread.
#pragma once

#include "sluice/export.h"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "sluice/batch.h"
#include "sluice/options.h"
#include "sluice/plan.h"
#include "sluice/state.h"

namespace sluice {

namespace detail {
class LoaderCore;
}

// How many forks separate this process from the one where Sluice was first
// used: an object that records it when it is made belongs to an ancestor
// wherever it differs (a Loader refuses to deliver to its forked copies).
// No system call, unlike getpid(): a relaxed load of a counter that a
// pthread_atfork handler bumps in the child, so hot paths may ask it per batch.
SLUICE_API std::uint64_t fork_generation();

struct SLUICE_API Stats {
  std::uint64_t batches_delivered = 0;
  std::uint64_t samples_delivered = 0;
  std::uint64_t bytes_delivered = 0;    // field bytes
  std::uint64_t consumer_wait_ns = 0;   // time next() spent blocked waiting for a batch
  std::uint64_t consumer_waits = 0;     // next() calls that had to block
  std::uint32_t max_in_flight = 0;      // most slots ever issued, ready or held at once
  std::uint64_t first_batch_ns = 0;     // from the Loader's construction to its first batch
  std::uint64_t slots_full_ns = 0;      // time all slots were taken while batches remained to
                                        // issue: workers could not run ahead (backpressure)
  std::uint64_t worker_fill_ns = 0;     // summed over workers: time filling batches
  std::uint64_t worker_idle_ns = 0;     // summed over workers: time with no batch to fill
  std::uint64_t worker_cpu_ns = 0;      // of worker_fill_ns: CPU time (user + system) of the workers
  std::uint64_t worker_runqueue_ns = 0; // of worker_fill_ns: runnable but waiting for a core (0 where
                                        // the kernel does not keep schedstats)
  std::uint32_t worker_restarts = 0;    // workers replaced after a crash or a timeout
  std::uint64_t batches_retried = 0;    // batches issued again after a failure
  std::vector<std::uint64_t> skipped_samples;  // dropped by on_error = skip, in the order they were
  std::vector<std::string> skip_reasons;       // why, for each of skipped_samples: the producer's error
                                               // (which names the file or record) or the crash
  std::uint64_t empty_batches = 0;             // batches every sample of which was skipped: not delivered
  std::uint32_t workers = 0;    // workers given batches now (options.workers, or what auto chose so far)
  std::string autotune;         // with options.max_workers: what was tried and chosen, e.g.
                                // "2 -> 4 -> 8 workers, kept 8 (x1.04 over 4: no more gain)"

  // Every field above as one JSON object, keyed by the fields' names (Python's
  // Loader.stats() is this, parsed). May allocate.
  std::string to_json() const;
};

class SLUICE_API Loader {
 public:
  // Validates options, creates the arena and starts the workers. Throws Error.
  explicit Loader(Options options);
  // Stops and reaps every worker and the zygote. Batches still held stay valid.
  // A zygote that does not answer within 2 s is killed with its workers, its
  // children, which init (or the host's subreaper) then reaps.
  ~Loader();
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;
  // Movable, so Loaders fit in containers (one per tower, say). A moved-from
  // Loader may only be destroyed or assigned to.
  Loader(Loader&&) noexcept = default;
  Loader& operator=(Loader&& other) noexcept;

  // The next batch of the run, or nullopt once every epoch has been delivered.
  // Blocks while no batch is ready. Throws Error if a worker failed.
  std::optional<Batch> next();

  // For hosts that must never block (a game-style frame loop, an event loop):
  // the next batch if one is ready now (try_next) or within `timeout`
  // (next_for), else nullopt. finished() tells the end of the run from "not
  // yet". Call one of them regularly (each frame): they also replace crashed
  // workers and run the watchdog, as next() does while it waits. A timeout
  // too long for the clock (milliseconds::max()) waits as next() does.
  // next(), try_next() and next_for() throw Error in a forked child: the
  // batches are the parent's.
  std::optional<Batch> try_next();
  std::optional<Batch> next_for(std::chrono::milliseconds timeout);
  // The same, bounded to the epochs up to `last_epoch`: nullopt once they are
  // all delivered (then current_epoch() > last_epoch), so a loop over one
  // epoch never takes the next epoch's first batch, also when the epoch's
  // last batches were emptied by on_error = skip.
  std::optional<Batch> next_for(std::chrono::milliseconds timeout, std::uint64_t last_epoch);
  // True once the run is over: every batch delivered, a failure, shut down,
  // or interrupt()ed.
  bool finished() const;
  // A file descriptor for epoll (level- or edge-triggered), libuv (uv_poll_t)
  // or a game loop's poll. After every call of next(), try_next() or
  // next_for() it is readable exactly while the next call would do
  // something: a batch is ready, a worker finished or exited, a released
  // batch's slot is to be refilled with nothing else in flight, or the run
  // ended or failed. The watchdog runs only inside those calls: wait on the
  // fd with a timeout (1 s or less) and call try_next() when it passes too.
  // Owned by the loader. Throws Error in a forked child.
  int ready_fd();

  // The batches of the current epoch (the epoch of the next batch), for range-for.
  class EpochRange;
  EpochRange epoch();

  // Push style: calls fn for every remaining batch; each batch is released when
  // fn returns unless fn moved it out.
  void run(const std::function<void(Batch&)>& fn);

  // Makes next() return nullopt as soon as possible (at most one wake-up
  // later), leaving the loader usable for state queries. Async-signal-safe and
  // thread-safe: call it from a SIGINT handler.
  void interrupt();
  bool interrupted() const;

  // Batch slots of the arena: options().slots, or its default when that is 0.
  std::uint32_t slots() const;

  // The shared-memory arena every batch lives in, e.g. to register it once
  // as pinned memory (cudaHostRegister) so batches copy to a GPU directly.
  // Valid as long as the Loader or any of its batches lives.
  std::span<std::byte> memory() const;

  // The worker processes, as of the loader's last look: a worker that died
  // since is replaced (with a new pid) the next time next() waits.
  std::vector<int> worker_pids() const;

  // Where the run stands: enough to build a Loader (Options::resume) that
  // delivers exactly the batches this one would deliver next.
  LoaderState state() const;
  // The same, as if `held` (a batch of this Loader) had not been delivered:
  // for a host that got a batch but could not pass it on (its own error came
  // first) and will use it later, so that a checkpoint taken meanwhile
  // resumes with that batch.
  LoaderState state_without(const Batch& held) const;

  const Options& options() const;
  const EpochPlan& plan() const;
  // The epoch of the next batch to be delivered (== options().epochs when done).
  std::uint64_t current_epoch() const;
  Stats stats() const;

  // With options.trace: the run so far as Chrome trace-event JSON (Perfetto,
  // chrome://tracing): a track per worker with its fills (epoch, batch,
  // samples), the consumer's waits in next(), restarts and skips as instants,
  // and the slots in use as a counter. write_trace writes it to a file.
  // Throws Error without options.trace, or when the file cannot be written.
  std::string trace_json() const;
  void write_trace(const std::string& path) const;

 private:
  std::optional<Batch> next_in_epoch(std::uint64_t epoch);
  std::shared_ptr<detail::LoaderCore> core_;
};

class Loader::EpochRange {
 public:
  class iterator {
   public:
    using value_type = Batch;
    using difference_type = std::ptrdiff_t;
    iterator() = default;
    iterator(Loader* loader, std::uint64_t epoch) : loader_(loader), epoch_(epoch) { advance(); }
    Batch& operator*() { return *current_; }
    iterator& operator++() { advance(); return *this; }
    void operator++(int) { advance(); }
    bool operator==(std::default_sentinel_t) const { return !current_; }

   private:
    void advance() {
      current_.reset();
      current_ = loader_->next_in_epoch(epoch_);
    }
    Loader* loader_ = nullptr;
    std::uint64_t epoch_ = 0;
    std::optional<Batch> current_;
  };
  EpochRange(Loader* loader, std::uint64_t epoch) : loader_(loader), epoch_(epoch) {}
  iterator begin() { return iterator(loader_, epoch_); }
  std::default_sentinel_t end() { return {}; }

 private:
  Loader* loader_;
  std::uint64_t epoch_;
};

inline Loader::EpochRange Loader::epoch() { return EpochRange(this, current_epoch()); }

}  // namespace sluice
