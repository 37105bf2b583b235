#include "worker.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <ctime>
#include <deque>
#include <limits>
#include <vector>
#include <cstdio>
#include <cstring>
#include <exception>
#include <fcntl.h>
#include <unistd.h>

#include "cpu_relax.h"
#include "sluice/batch_copy.h"
#include "sluice/producer.h"

namespace sluice::detail {

void copy_message(char* dst, std::size_t size, const char* message) {
  std::size_t n = std::strlen(message);
  if (n >= size) n = size - 1;
  std::memcpy(dst, message, n);
  dst[n] = '\0';
}

std::uint64_t monotonic_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000ULL + static_cast<std::uint64_t>(ts.tv_nsec);
}

namespace {

// The worker's sorted copy of the shared skip list, refreshed when it grows.
class SkippedSamples {
 public:
  explicit SkippedSamples(const SkipList& shared) : shared_(shared) {}

  // Removes skipped ids from ids[0, size) in place, keeping order; returns the
  // new size. With SkipFill::repeat, the survivors then fill the freed places
  // again, in order, cycling, so the batch keeps its size unless none survived.
  std::uint32_t filter(std::uint64_t* ids, std::uint32_t size, SkipFill fill) {
    const std::uint32_t kept = remove_skipped(ids, size);
    if (fill != SkipFill::repeat || kept == 0) return kept;
    for (std::uint32_t j = kept; j < size; ++j) ids[j] = ids[j - kept];
    return size;
  }

 private:
  std::uint32_t remove_skipped(std::uint64_t* ids, std::uint32_t size) {
    // Bounded: a producer may have scribbled the count (the parent publishes
    // its own again with its next skip); a count that went down starts over.
    const std::uint32_t count = std::min<std::uint32_t>(shared_.count.load(std::memory_order_acquire), kMaxSkipped);
    if (count == 0) return size;
    if (count != seen_) {
      if (count < seen_) {
        local_.clear();
        seen_ = 0;
      }
      local_.insert(local_.end(), shared_.ids + seen_, shared_.ids + count);
      std::sort(local_.begin(), local_.end());
      seen_ = count;
    }
    std::uint32_t kept = 0;
    for (std::uint32_t j = 0; j < size; ++j) {
      if (!std::binary_search(local_.begin(), local_.end(), ids[j])) ids[kept++] = ids[j];
    }
    return kept;
  }

  const SkipList& shared_;
  std::uint32_t seen_ = 0;
  std::vector<std::uint64_t> local_;
};

// How long an idle worker polls its ring before sleeping: long enough to ride
// out the gap between two tasks of a busy pipeline, short enough not to burn a
// core when the consumer is slow. Only while the parent says there are cores
// to spare (ArenaHeader::workers_poll): on a machine the parent and workers
// share, a polling worker takes the core the consumer needs, and on 2 cores
// with 2 workers the Python handoff ran at 45,000 batches/s polling and
// 71,000 sleeping at once (95,000 once woken a burst at a time, loader_core.cpp).
constexpr auto kSpin = std::chrono::microseconds(50);
// An asleep worker wakes this often to check that its parent is alive.
constexpr int kSleepMs = 500;

// The worker is busy with batch `seq` since `now_ns`, at no known sample yet:
// the release store of busy_seq publishes the three stores before it
// (shared_layout.h).
void publish_busy(WorkerChannel& ch, std::uint64_t seq, std::uint64_t now_ns) {
  ch.busy_position.store(kUnknownPosition, std::memory_order_relaxed);
  ch.busy_since_ns.store(now_ns, std::memory_order_relaxed);
  ch.alive_ns.store(now_ns, std::memory_order_relaxed);
  ch.busy_seq.store(seq, std::memory_order_release);
}

// Idle again, alive at `now_ns`: the release store publishes alive_ns.
void publish_idle(WorkerChannel& ch, std::uint64_t now_ns) {
  ch.alive_ns.store(now_ns, std::memory_order_relaxed);
  ch.busy_seq.store(kIdle, std::memory_order_release);
}

bool wait_for_task(WorkerChannel& ch, const ArenaHeader& header, pid_t parent, Task& task) {
  auto spin_until = header.workers_poll.load(std::memory_order_relaxed) != 0
                        ? std::chrono::steady_clock::now() + kSpin
                        : std::chrono::steady_clock::time_point{};
  for (;;) {
    if (header.stop.load(std::memory_order_relaxed)) return false;
    if (ch.tasks.try_pop(task)) return true;
    if (std::chrono::steady_clock::now() < spin_until) {
      cpu_relax();
      continue;
    }
    ch.tasks.wait(kSleepMs);
    if (getppid() != parent) return false;
  }
}

// Where a fill's wall time went: CPU time of the whole worker process (user +
// system; the producer's reader threads too) and how long the worker's main
// thread, which runs the fill, sat runnable on a run queue waiting for a core
// (/proc/self/schedstat, the thread group leader's: "on-cpu wait slices" in
// ns). Read before and after a fill, a few microseconds: sampled (worker_main).
class CpuClock {
 public:
  CpuClock() : schedstat_(open("/proc/self/schedstat", O_RDONLY | O_CLOEXEC)) {}
  ~CpuClock() {
    if (schedstat_ >= 0) close(schedstat_);
  }
  CpuClock(const CpuClock&) = delete;
  CpuClock& operator=(const CpuClock&) = delete;

  static std::uint64_t cpu_ns() {
    timespec ts;
    if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) != 0) return 0;
    return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000ULL + static_cast<std::uint64_t>(ts.tv_nsec);
  }
  // 0 where the kernel keeps no schedstats.
  std::uint64_t runqueue_ns() const {
    if (schedstat_ < 0) return 0;
    char text[96];
    const ssize_t n = pread(schedstat_, text, sizeof text - 1, 0);
    if (n <= 0) return 0;
    text[n] = '\0';
    unsigned long long on_cpu = 0, waiting = 0;
    return std::sscanf(text, "%llu %llu", &on_cpu, &waiting) == 2 ? waiting : 0;
  }

 private:
  int schedstat_;
};

// Appends one fill to the worker's trace ring; the ordering is in
// shared_layout.h (TraceEntry): a per-entry seqlock, then the count.
void record_fill(TraceRing& ring, std::uint64_t start_ns, std::uint64_t end_ns, std::uint64_t seq,
                 std::uint32_t samples, bool failed) {
  const std::uint64_t i = ring.count.load(std::memory_order_relaxed);  // only this worker writes it
  TraceEntry& e = ring.entries[i % kTraceEvents];
  e.tag.store(2 * i + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);  // the odd tag before any field
  e.start_ns.store(start_ns, std::memory_order_relaxed);
  e.end_ns.store(end_ns, std::memory_order_relaxed);
  e.seq.store(seq, std::memory_order_relaxed);
  e.samples.store(samples | (failed ? (1ULL << 32) : 0), std::memory_order_relaxed);
  e.tag.store(2 * i + 2, std::memory_order_release);
  ring.count.store(i + 1, std::memory_order_release);
}

// The tasks a worker holds: what it has popped from its ring and not filled
// yet. Each batch is announced to the producer (Producer::upcoming) once, when
// it is popped, so reads for later batches start before the current fill.
// Its samples are found in the plan then, once: a shuffled plan costs a
// keyed permutation per sample, as much as copying a small one.
class TaskQueue {
 public:
  TaskQueue(WorkerChannel& ch, const ArenaHeader& header, pid_t parent, const WorkerEnv& env, Producer& producer,
            SkippedSamples& skipped)
      : ch_(ch), header_(header), parent_(parent), env_(env), producer_(producer), skipped_(skipped),
        ids_(env.options.batch_size) {}

  // The next task to fill and its samples as the plan lists them (no skip
  // filtered out); false when the worker must stop.
  bool next(Task& task, std::vector<std::uint64_t>& planned) {
    if (held_.empty()) {
      Task t;
      if (!wait_for_task(ch_, header_, parent_, t)) return false;
      take(t);
    }
    Task more;
    while (ch_.tasks.try_pop(more)) take(more);  // everything already queued, for read-ahead
    if (header_.stop.load(std::memory_order_relaxed)) return false;
    task = held_.front().task;
    planned.swap(held_.front().ids);
    spare_.push_back(std::move(held_.front().ids));  // the caller's last buffer, for a later task
    held_.pop_front();
    return true;
  }

 private:
  struct Held {
    Task task;
    std::vector<std::uint64_t> ids;  // the batch's samples, as planned
  };

  void take(const Task& t) {
    Held& held = held_.emplace_back();
    held.task = t;
    if (!spare_.empty()) {
      held.ids = std::move(spare_.back());
      spare_.pop_back();
    }
    const std::uint64_t per_epoch = env_.plan.batches_per_epoch();
    const std::uint64_t batch = t.seq % per_epoch;
    std::uint32_t size = env_.plan.batch_length(batch);
    held.ids.resize(size);
    env_.plan.batch_samples(t.seq / per_epoch, batch, held.ids);
    std::copy(held.ids.begin(), held.ids.end(), ids_.begin());
    size = skipped_.filter(ids_.data(), size, SkipFill::shrink);  // a skipped sample is not announced again
    // Busy with the batch while the producer hears of it: a crash or a hang
    // in there is blamed on it (the parent names its samples from the plan).
    const std::uint64_t now = monotonic_ns();
    publish_busy(ch_, t.seq, now);
    try {
      producer_.upcoming(t.seq / per_epoch, batch, {ids_.data(), size});
    } catch (...) {
      // Advisory only: a real problem with these samples surfaces in fill().
    }
    publish_idle(ch_, monotonic_ns());
  }

  WorkerChannel& ch_;
  const ArenaHeader& header_;
  pid_t parent_;
  const WorkerEnv& env_;
  Producer& producer_;
  SkippedSamples& skipped_;
  std::deque<Held> held_;
  std::vector<std::vector<std::uint64_t>> spare_;  // buffers of filled tasks, reused
  std::vector<std::uint64_t> ids_;
};

void describe_batch(SlotHeader& h, const WorkerEnv& env, std::uint32_t id, const Task& task,
                    std::uint64_t epoch, std::uint64_t batch, std::uint32_t size) {
  h.epoch = epoch;
  h.batch = batch;
  h.seq = task.seq;
  h.size = size;
  h.worker = id;
  h.ids_offset = env.layout.ids_offset;
  h.field_count = static_cast<std::uint32_t>(env.options.fields.size());
  describe_fields(h.fields, env.options, env.layout, size);
  h.status = 0;
  h.failed_position = kUnknownPosition;
  h.error[0] = '\0';
}

}  // namespace

void worker_main(const WorkerEnv& env, std::uint32_t id) {
  const pid_t parent = getppid();
  ArenaHeader& header = arena_header(env.arena);
  WorkerChannel& ch = worker_channel(env.arena, env.layout, id);
  env.arena.prefault_in_this_process();

  auto report = [&](const Completion& c) {
    ch.done.try_push(c);  // never full: at most `slots` completions are outstanding
    if (header.parent_sleeping.must_ring()) {
      std::uint64_t one = 1;
      [[maybe_unused]] ssize_t n = write(env.parent_eventfd, &one, sizeof one);
    }
  };

  bool started = false;
  try {
    env.options.producer->start_worker(id);
    env.options.producer->look_ahead(env.plan, env.options.epochs == 0
                                                   ? std::numeric_limits<std::uint64_t>::max()
                                                   : env.options.epochs * env.plan.batches_per_epoch());
    started = true;
  } catch (const std::exception& e) {
    copy_message(ch.start_error, sizeof ch.start_error, e.what());
  } catch (...) {
    copy_message(ch.start_error, sizeof ch.start_error, "unknown exception from start_worker");
  }
  ch.alive_ns.store(monotonic_ns(), std::memory_order_relaxed);
  Task task{};
  if (!started) {
    // The parent fails the run on this report; ignore tasks until it stops us.
    report({kNoSlot, Status::start_failed, 0});
    while (wait_for_task(ch, header, parent, task)) {
    }
    _exit(0);
  }

  const std::uint64_t per_epoch = env.plan.batches_per_epoch();
  SkippedSamples skipped(skip_list(env.arena, env.layout));
  TaskQueue queue(ch, header, parent, env, *env.options.producer, skipped);
  std::uint64_t idle_since = monotonic_ns();
  CpuClock cpu_clock;
  // Reading the CPU clocks costs a few microseconds (a system call and a
  // procfs read): as much as a whole small batch, which would halve a fast
  // pipeline. So a fill is measured when the last measured one began at least
  // kCpuSampleNs before, and its CPU and run-queue times stand for every fill
  // since, scaled by their wall time. Fills of a millisecond or more are all
  // measured, exactly.
  constexpr std::uint64_t kCpuSampleNs = 1'000'000;
  std::uint64_t last_measured_ns = 0, unmeasured_fill_ns = 0;
  std::vector<std::uint64_t> planned;
  while (queue.next(task, planned)) {
    const std::uint64_t fill_start = monotonic_ns();
    const bool measure = last_measured_ns == 0 || fill_start - last_measured_ns >= kCpuSampleNs;
    const std::uint64_t cpu_start = measure ? CpuClock::cpu_ns() : 0;
    const std::uint64_t runqueue_start = measure ? cpu_clock.runqueue_ns() : 0;
    if (measure) last_measured_ns = fill_start;
    ch.idle_ns.fetch_add(fill_start - idle_since, std::memory_order_relaxed);
    std::byte* base = slot_base(env.arena, env.layout, task.slot);
    SlotHeader& h = *reinterpret_cast<SlotHeader*>(base);
    const std::uint64_t epoch = task.seq / per_epoch;
    const std::uint64_t batch = task.seq % per_epoch;
    publish_busy(ch, task.seq, fill_start);  // before anything of the batch is made: all of it is blamed on it
    auto* ids = reinterpret_cast<std::uint64_t*>(base + env.layout.ids_offset);
    auto size = static_cast<std::uint32_t>(planned.size());  // env.plan.batch_samples, as TaskQueue took it
    std::copy(planned.begin(), planned.end(), ids);
    size = skipped.filter(ids, size, env.options.skip_fill);
    describe_batch(h, env, id, task, epoch, batch, size);
    Status status = Status::ok;
    try {
      BatchContext ctx(epoch, batch, id, {ids, size}, env.options.fields, env.layout.sample_bytes,
                       env.layout.field_offsets, base, &ch.busy_position);
      env.options.producer->fill(ctx);
    } catch (const std::exception& e) {
      copy_message(h.error, sizeof h.error, e.what());
      status = Status::fill_failed;
    } catch (...) {
      copy_message(h.error, sizeof h.error, "unknown exception from the producer");
      status = Status::fill_failed;
    }
    // Orders the fill's streaming stores (copy_to_batch) before the release
    // store that reports the batch: on x86 a release store orders ordinary
    // stores only. One fence per batch; fencing per copy costs a third of the
    // copy bandwidth with two workers.
    store_fence();
    // What the producer printed (a map's print()) reaches a file or pipe as
    // the batch completes, not never: a worker ends in _exit. Cheap when
    // nothing is buffered.
    std::fflush(stdout);
    idle_since = monotonic_ns();
    const std::uint64_t fill_ns = idle_since - fill_start;
    ch.fill_ns.fetch_add(fill_ns, std::memory_order_relaxed);
    unmeasured_fill_ns += fill_ns;
    if (measure) {
      const std::uint64_t cpu_end = CpuClock::cpu_ns(), runqueue_end = cpu_clock.runqueue_ns();
      const double scale = fill_ns != 0 ? static_cast<double>(unmeasured_fill_ns) / static_cast<double>(fill_ns) : 1;
      auto scaled = [scale](std::uint64_t from, std::uint64_t to) {
        return to > from ? static_cast<std::uint64_t>(static_cast<double>(to - from) * scale) : 0;
      };
      ch.cpu_ns.fetch_add(scaled(cpu_start, cpu_end), std::memory_order_relaxed);
      ch.runqueue_ns.fetch_add(scaled(runqueue_start, runqueue_end), std::memory_order_relaxed);
      unmeasured_fill_ns = 0;
    }
    if (env.layout.trace_offset != 0) {
      record_fill(trace_ring(env.arena, env.layout, id), fill_start, idle_since, task.seq, size,
                  status != Status::ok);
    }
    h.failed_position = ch.busy_position.load(std::memory_order_relaxed);
    h.status = static_cast<std::int32_t>(status);
    // Idle before reporting: a crash after this point loses the completion,
    // and the parent re-issues the batch without blaming it.
    publish_idle(ch, idle_since);
    report({task.slot, status, task.seq});
  }
  _exit(0);
}

}  // namespace sluice::detail
