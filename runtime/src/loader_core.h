// loader_core.h: the parent's scheduler.
//
// Owns the arena and runs entirely on the consumer's thread inside next(): no
// background thread. Each call
//   1. takes back slots released by Batches (a lock-free queue, since a Batch
//      may be released on any thread),
//   2. issues the next batches of the plan to free slots, each to the worker
//      with the fewest outstanding tasks,
//   3. collects completions from every worker's ring,
//   4. returns the next batch in plan order (or any ready batch of the current
//      epoch when unordered), or sleeps on an eventfd until a worker reports.
// A slot is issued, ready, or held by the consumer; `slots` bounds all three
// together, which is the prefetch limit and the backpressure.
//
// The code is split by concern:
//   - loader_core.cpp: scheduling and delivery;
//   - slot_table.h: each slot's state (free, issued, ready, held), its batch
//     and worker, and the ready index batches are delivered from;
//   - fault_ledger.h: the fault policy's counts and decisions (count a crash,
//     a hang or a throw against a batch and a sample; retry, skip or fail);
//   - fault_policy.cpp: finds the batch and sample to blame, and carries the
//     ledger's decision out (skip, fail, a fresh worker, batches re-issued);
//   - resume.cpp: a resume applied and the state taken; the LoaderState
//     itself and a resume's checks are state.cpp's (state_internal.h);
//   - trace.cpp: the consumer's trace marks and the Chrome trace JSON;
//   - supervisor.h: the processes themselves (the zygote, the workers, the
//     watchdog).
//
// Faults: the zygote reports a worker's death at once. The parent blames the
// batch and sample the worker was making (WorkerChannel::busy_*), replaces the
// worker, and re-issues every batch that worker still owed. A batch is a pure
// function of the plan, so the re-issued batch comes out the same. A sample
// that crashes or hangs its worker max_retries times in a row, or whose
// producer throws, gets the on_error policy. Every failure goes through fail():
// it stops the processes, and every later next() raises the same error. One
// exception, in plan order: a batch whose producer threw and failed the run
// while batches before it were on their way is deferred (deferred_failure_):
// issuing stops, the batches before it are delivered, and fail() runs when
// it is due.
#pragma once

#include <concurrentqueue/concurrentqueue.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "arena.h"
#include "autotune.h"
#include "fault_ledger.h"
#include "shared_layout.h"
#include "slot_table.h"
#include "sluice/batch.h"
#include "sluice/loader.h"
#include "sluice/options.h"
#include "sluice/plan.h"
#include "supervisor.h"

namespace sluice::detail {

class LoaderCore : public std::enable_shared_from_this<LoaderCore> {
 public:
  explicit LoaderCore(Options options);
  ~LoaderCore();

  // Forks the zygote and the workers. Separate from the constructor so that
  // the worker entry point can hold a pointer to a fully built core.
  void start();
  // Stops and reaps every process. Idempotent. Held batches stay readable.
  void shutdown();

  // The next batch whose epoch is at most max_epoch; nullopt when there is
  // none, once interrupted, or when `timeout` passes first (none: no limit).
  std::optional<Batch> next(std::uint64_t max_epoch,
                            std::optional<std::chrono::milliseconds> timeout = std::nullopt);
  bool finished() const { return delivered_ >= total_batches_ || !failure_.empty() || stopped_ || interrupted(); }
  // An epoll fd over the eventfd and the zygote's socket; made on first use,
  // after which every completion rings the eventfd and every call leaves it
  // readable exactly while a call would do something (rearm_ready_fd).
  int ready_fd();
  // Thread-safe: gives a slot back to the pool.
  void release(std::uint32_t slot);
  // Async-signal-safe.
  void interrupt();
  bool interrupted() const { return interrupted_.load(std::memory_order_relaxed); }

  const Options& options() const { return options_; }
  const EpochPlan& plan() const { return plan_; }
  const ArenaLayout& layout() const { return layout_; }
  const Arena& arena() const { return *arena_; }
  std::uint64_t current_epoch() const;
  // undelivered: a batch handed out that the host could not pass on and will
  // take again (its sequence number): the state counts it as not delivered.
  LoaderState state(std::optional<std::uint64_t> undelivered = std::nullopt) const;
  Stats stats() const;
  std::vector<int> worker_pids() const { return supervisor_->pids(); }
  // With options.trace (trace.cpp): the run so far as Chrome trace-event JSON.
  std::string trace_json() const;

 private:
  // The consumer's side of the trace: what happened on this thread, the last
  // kTraceMarks of it (a ring: the oldest are overwritten).
  struct TraceMark {
    enum class Kind : std::uint8_t { wait, restart, skip, slots };
    Kind kind;
    std::uint64_t ts_ns;     // CLOCK_MONOTONIC
    std::uint64_t value;     // wait: its duration; restart: the worker; skip: the sample;
                             // slots: filling | ready << 21 | held << 42
    std::string what;        // restart, skip: why
  };
  static constexpr std::size_t kTraceMarks = 65536;
  void trace_mark(TraceMark::Kind kind, std::uint64_t ts_ns, std::uint64_t value, std::string what = {});
  // Records the slots' states when they changed since the last record.
  void trace_slots();

  void resume_from(const LoaderState& state);
  void reclaim_released();
  void issue();
  void assign(std::uint32_t slot, std::uint64_t seq);
  void notify_workers();
  void collect();
  void collect_from(std::uint32_t w);
  void on_fill_failed(std::uint32_t w, const Completion& c);
  void on_worker_exit(const WorkerExit& e);
  void on_batch_done(std::uint32_t slot);
  void skip_samples(std::span<const std::uint64_t> ids, const std::string& reason);
  // Carries out the ledger's decision: fail() or skip_samples(); a retry needs nothing here.
  void apply(const FaultDecision& decision);
  // The slot's header, if a producer left it intact enough to name its samples.
  const SlotHeader* trusted_header(std::uint32_t slot, std::uint64_t seq) const;
  const std::uint64_t* slot_ids(std::uint32_t slot) const;
  std::vector<std::uint64_t> planned_ids(std::uint64_t seq) const;
  std::vector<std::uint64_t> batch_ids(std::uint64_t seq, std::uint32_t slot) const;
  std::string describe_batch(std::uint64_t seq, std::uint32_t slot) const;
  std::optional<std::uint32_t> pick_ready();
  void advance_delivered_prefix();
  // nullopt for a batch whose samples were all skipped: its slot goes back at once.
  std::optional<Batch> deliver(std::uint32_t slot);
  // Sleeps until a worker reports, a batch is released or a process exits;
  // at most max_sleep_ms when >= 0.
  void wait_for_workers(int max_sleep_ms);
  void handle_exits();
  [[noreturn]] void fail(const std::string& message);
  [[noreturn]] void fail_all_slots_held();
  int held_wait_left_ms();
  std::uint32_t least_loaded_worker() const;
  // Auto workers: after a delivered batch, lets the tuner grow (or settle) the workers in use.
  void tune();
  void set_active_workers(std::uint32_t n);
  bool issue_now() const;  // issue(): whether free slots go to the workers now or wait for more
  // This is a forked child's copy of the core (made_in_generation_).
  bool forked_copy() const;
  std::string forked_copy_message() const;
  // With a ready fd: drains the eventfd and rings it again if has_news().
  void rearm_ready_fd();
  // Something for the consumer's thread to do now.
  bool has_news();

  Options options_;
  EpochPlan plan_;
  ArenaLayout layout_;
  std::unique_ptr<Arena> arena_;
  int eventfd_ = -1;
  std::atomic<int> ready_fd_{-1};  // epoll over eventfd_ and the zygote's socket, once asked for
  std::atomic<std::uint32_t> busy_slots_{0};  // with ready_fd_: slots issued or ready at the last call's end
  std::unique_ptr<Supervisor> supervisor_;  // after arena_: stops the processes before it is unmapped
  // fork_generation() when this core was made: elsewhere it is a forked
  // child's copy, which releases and destroys nothing (owned_resources.h).
  std::uint64_t made_in_generation_ = 0;
  pid_t made_in_pid_ = 0;

  std::uint64_t total_batches_;      // over all epochs; UINT64_MAX when epochs == 0
  std::uint64_t next_issue_ = 0;     // next sequence number to issue
  std::uint64_t next_deliver_ = 0;   // ordered: next sequence number to deliver
  std::uint64_t delivered_ = 0;      // batches handed to the consumer
  SlotTable slots_;                            // each slot's state, batch and worker
  std::vector<std::uint64_t> delivered_seqs_;  // unordered: delivered batches at or past next_deliver_
  std::vector<std::uint64_t> resumed_ahead_;   // unordered resume: batches not to issue again
  std::vector<std::uint32_t> outstanding_;   // per worker: tasks issued, not yet completed
  std::uint32_t active_workers_ = 0;         // workers given batches: ids [0, active_workers_)
  std::uint32_t cores_ = 1;                  // CPUs this process may run on (sched_getaffinity)
  std::optional<AutoTuner> tuner_;           // with options.max_workers
  std::uint64_t notify_mask_ = 0;            // workers given tasks since the last notify
  moodycamel::ConcurrentQueue<std::uint32_t> released_;

  FaultLedger faults_;  // failures in a row, and what each new one means
  // What deliver() checks a slot's header against: the fields of a batch of
  // described_size_ samples (a batch size or a ragged last batch's), made
  // again only when the size changes.
  BatchHeader described_{};
  std::uint32_t described_size_ = UINT32_MAX;

  // Timing.
  std::uint64_t created_ns_ = 0;
  std::uint64_t slots_full_since_ns_ = 0;  // 0 while a slot is free or nothing is left to issue
  std::uint64_t all_held_since_ns_ = 0;    // 0 unless the consumer holds every slot

  std::vector<TraceMark> trace_marks_;  // a ring once it holds kTraceMarks
  std::size_t trace_next_ = 0;          // where the next mark goes once the ring is full
  std::uint64_t traced_slots_ = ~0ULL;

  // Ordered delivery: a batch whose fill failed the run (on_error = fail)
  // while batches before it were still on their way. They are delivered
  // first; the run fails when this one is due.
  struct DeferredFailure {
    std::uint64_t seq;
    std::string reason;
  };
  std::optional<DeferredFailure> deferred_failure_;
  bool failure_due() const { return deferred_failure_ && next_deliver_ >= deferred_failure_->seq; }
  std::string failure_;
  std::atomic<bool> stopped_{false};
  std::atomic<bool> interrupted_{false};
  Stats stats_;
};

// Keeps one slot (and the core with its arena) alive while a Batch or a DLPack
// tensor refers to it; gives the slot back when the last reference goes.
// header(): the parent's checked copy (BatchHeader), never the slot's own.
class SlotLease {
 public:
  SlotLease(std::shared_ptr<LoaderCore> core, std::uint32_t slot, std::byte* base, const BatchHeader& header)
      : core_(std::move(core)), slot_(slot), base_(base), header_(header) {}
  ~SlotLease() { core_->release(slot_); }
  SlotLease(const SlotLease&) = delete;
  SlotLease& operator=(const SlotLease&) = delete;

  const BatchHeader& header() const { return header_; }
  std::byte* base() const { return base_; }

 private:
  std::shared_ptr<LoaderCore> core_;
  std::uint32_t slot_;
  std::byte* base_;
  BatchHeader header_;
};

}  // namespace sluice::detail
