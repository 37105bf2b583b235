#include "loader_core.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <limits>
#include <new>
#include <poll.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "cpu_relax.h"
#include "owned_resources.h"
#include "sluice/error.h"
#include "worker.h"

namespace sluice::detail {

namespace {

using Clock = std::chrono::steady_clock;

// Auto workers: batches one worker may owe at once (one filling, one next).
constexpr std::uint32_t kAutoOwed = 2;

// How long next() polls the completion rings before sleeping on the eventfd.
constexpr auto kSpin = std::chrono::microseconds(20);

std::uint64_t elapsed_ns(Clock::time_point since) {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - since).count());
}

void ring_eventfd(int fd) {
  std::uint64_t one = 1;
  [[maybe_unused]] ssize_t n = write(fd, &one, sizeof one);
}

}  // namespace

LoaderCore::LoaderCore(Options options)
    : options_(std::move(options)),
      plan_(options_),
      layout_(ArenaLayout::compute(options_)),
      slots_(layout_.slots, options_.ordered),
      faults_(options_, layout_.workers) {
  made_in_generation_ = fork_generation();
  made_in_pid_ = getpid();
  if (!options_.producer) throw OptionsError("options.producer is not set: nothing would fill the batches");
  if (options_.max_retries == 0) throw OptionsError("options.max_retries is 0: a sample must be tried at least once");
  created_ns_ = monotonic_ns();
  arena_ = std::make_unique<Arena>(layout_.total_bytes, "sluice-arena");
  auto* header = new (arena_->base()) ArenaHeader{};
  header->magic = kArenaMagic;
  reset_skip_list(&skip_list(*arena_, layout_));
  for (std::uint32_t w = 0; w < layout_.workers; ++w) reset_channel(&worker_channel(*arena_, layout_, w));
  for (std::uint32_t w = 0; options_.trace && w < layout_.workers; ++w) {
    new (&trace_ring(*arena_, layout_, w)) TraceRing{};  // before the fork: the workers start from it
  }
  {
    OwnedLock lock;  // another Loader's zygote must not inherit it
    eventfd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (eventfd_ < 0) throw Error(std::string("eventfd failed: ") + std::strerror(errno));
    register_fd(eventfd_);
  }
  supervisor_ = std::make_unique<Supervisor>(*arena_, layout_, options_, plan_.batches_per_epoch());

  total_batches_ = options_.epochs == 0 ? std::numeric_limits<std::uint64_t>::max()
                                        : options_.epochs * plan_.batches_per_epoch();
  outstanding_.assign(layout_.workers, 0);
  {
    cpu_set_t cpus;
    cores_ = sched_getaffinity(0, sizeof cpus, &cpus) == 0 ? static_cast<std::uint32_t>(CPU_COUNT(&cpus)) : 1;
  }
  set_active_workers(layout_.start_workers);
  if (options_.max_workers > options_.workers) {  // auto, even if the memory budget leaves no room to grow
    tuner_.emplace(layout_.start_workers, layout_.workers, cores_);
  }
  if (options_.resume) resume_from(*options_.resume);
}

LoaderCore::~LoaderCore() {
  if (forked_copy()) {
    // A forked child's copy: the workers, descriptors and arena are the
    // parent's (or already dropped here). Forget them without their
    // destructors; the child's copy of their memory goes with the child.
    [[maybe_unused]] Supervisor* s = supervisor_.release();
    [[maybe_unused]] Arena* a = arena_.release();
    return;
  }
  shutdown();
  OwnedLock lock;
  for (int fd : {ready_fd_.load(), eventfd_}) {
    if (fd < 0) continue;
    unregister_fd(fd);
    close(fd);
  }
}

void LoaderCore::start() {
  const int keep[] = {eventfd_};
  supervisor_->start(
      [this](std::uint32_t id) {
        WorkerEnv env{*arena_, layout_, plan_, options_, eventfd_};
        worker_main(env, id);
      },
      keep);
}

bool LoaderCore::forked_copy() const { return fork_generation() != made_in_generation_; }

void LoaderCore::shutdown() {
  if (forked_copy() || stopped_.exchange(true)) return;  // a forked child stops nothing of its parent's
  arena_header(*arena_).stop.store(1, std::memory_order_relaxed);
  for (std::uint32_t w = 0; w < layout_.workers; ++w) worker_channel(*arena_, layout_, w).tasks.wake();
  supervisor_->stop();  // the zygote kills and reaps the workers, then is reaped
}

void LoaderCore::release(std::uint32_t slot) {
  if (forked_copy()) return;  // a forked child's copy of a batch
  released_.enqueue(slot);
  if (stopped_) return;
  if (ready_fd_.load(std::memory_order_relaxed) >= 0) {
    // A polling host is woken for a release only when nothing else would
    // wake it: with a slot issued or ready, a completion (or the ready fd
    // already readable) brings it back, and that call issues this slot too.
    // Dekker with rearm_ready_fd(): this side enqueues, then reads
    // busy_slots_; that side stores busy_slots_, then looks at released_.
    // With both fences one of them sees the other's write, so a release
    // with nothing in flight always rings.
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (busy_slots_.load(std::memory_order_relaxed) == 0) ring_eventfd(eventfd_);
    return;
  }
  // Wake the consumer if it sleeps in next() (the batch may be released on
  // another thread); same handshake as a worker's completion.
  if (arena_header(*arena_).parent_sleeping.must_ring()) ring_eventfd(eventfd_);
}

void LoaderCore::interrupt() {
  interrupted_.store(true, std::memory_order_relaxed);
  ring_eventfd(eventfd_);
}

std::uint64_t LoaderCore::current_epoch() const {
  std::uint64_t epoch = delivered_ / plan_.batches_per_epoch();
  return options_.epochs == 0 ? epoch : std::min<std::uint64_t>(epoch, options_.epochs);
}

void LoaderCore::fail(const std::string& message) {
  failure_ = message;
  shutdown();
  ring_eventfd(eventfd_);  // a host polling ready_fd wakes and gets the error from its next call
  throw Error(message);
}

// Every slot is held by the consumer: nothing can be filled until it lets one
// go, so waiting would hang. Not a failure of the run: once the consumer
// releases a batch, next() works again.
void LoaderCore::fail_all_slots_held() {
  throw Error("all " + std::to_string(layout_.slots) + " batch slots have been held by the consumer for " +
              std::to_string(options_.held_timeout_ms) + " ms (Batches, or tensors made from them, are still "
              "alive), so no batch can be filled: release batches before calling next() again (keep a copy "
              "of what outlives its step: .clone() of a tensor, .copy() of an array, .item() of a loss, a "
              "memcpy in C; a small view pins its whole batch), or raise prefetch (prefetch= in Python, "
              "prefetch in a pipeline, Options::slots in C++, sluice_options.slots in C) to at least 2 more "
              "than the batches kept at once (one being filled while the loop holds another)");
}

void LoaderCore::reclaim_released() {
  std::uint32_t slot;
  while (released_.try_dequeue(slot)) slots_.free(slot);
  if (slots_full_since_ns_ != 0 && slots_.free_count() != 0) {
    stats_.slots_full_ns += monotonic_ns() - slots_full_since_ns_;
    slots_full_since_ns_ = 0;
  }
}

Stats LoaderCore::stats() const {
  Stats s = stats_;
  for (std::uint32_t w = 0; w < layout_.workers; ++w) {
    const WorkerChannel& ch = worker_channel(*arena_, layout_, w);
    s.worker_fill_ns += supervisor_->retired_fill_ns(w) + ch.fill_ns.load(std::memory_order_relaxed);
    s.worker_idle_ns += supervisor_->retired_idle_ns(w) + ch.idle_ns.load(std::memory_order_relaxed);
    s.worker_cpu_ns += supervisor_->retired_cpu_ns(w) + ch.cpu_ns.load(std::memory_order_relaxed);
    s.worker_runqueue_ns += supervisor_->retired_runqueue_ns(w) + ch.runqueue_ns.load(std::memory_order_relaxed);
  }
  if (slots_full_since_ns_ != 0) s.slots_full_ns += monotonic_ns() - slots_full_since_ns_;
  s.workers = active_workers_;
  if (tuner_) s.autotune = tuner_->summary();
  return s;
}

std::uint32_t LoaderCore::least_loaded_worker() const {
  auto it = std::min_element(outstanding_.begin(), outstanding_.begin() + active_workers_);
  return static_cast<std::uint32_t>(it - outstanding_.begin());
}

void LoaderCore::tune() {
  if (!tuner_ || tuner_->settled()) return;
  const Stats s = stats();
  bool starting = false;  // alive_ns is 0 until a worker's start-up is done (relaxed: a hint, shared_layout.h)
  for (std::uint32_t w = 0; w < supervisor_->started() && !starting; ++w) {
    starting = worker_channel(*arena_, layout_, w).alive_ns.load(std::memory_order_relaxed) == 0;
  }
  const std::uint32_t want =
      tuner_->observe({monotonic_ns(), s.batches_delivered, s.worker_cpu_ns, s.consumer_wait_ns}, starting);
  if (want > supervisor_->started()) {
    // A growth that cannot fork (a process limit reached for longer than
    // spawn's back-off) is no failure of the run: the tuner stops at what runs.
    try {
      supervisor_->grow(want);
    } catch (const SpawnFailed& e) {
      set_active_workers(tuner_->stop_at(supervisor_->started(), std::string("could not start more: ") + e.what()));
      return;
    } catch (const Error& e) {
      fail(std::string("auto workers: ") + e.what());  // the zygote died or is stuck
    }
  }
  // Fewer when the last growth did not pay: the extra workers finish what
  // they owe and then idle.
  set_active_workers(want);
}

// Workers that wait for a task poll only while each of them and the parent
// has a core of its own (ArenaHeader::workers_poll).
void LoaderCore::set_active_workers(std::uint32_t n) {
  active_workers_ = n;
  const std::uint32_t poll = n + 1 <= cores_ ? 1 : 0;
  std::atomic<std::uint32_t>& shared = arena_header(*arena_).workers_poll;
  // Written only when it changes: the tuner calls this after every batch, and the line is shared.
  if (shared.load(std::memory_order_relaxed) != poll) shared.store(poll, std::memory_order_relaxed);
}

// Gives batch `seq` in `slot` to the least loaded worker. Its ring never
// fills: a worker never owes more batches than there are slots.
void LoaderCore::assign(std::uint32_t slot, std::uint64_t seq) {
  const std::uint32_t w = least_loaded_worker();
  if (!worker_channel(*arena_, layout_, w).tasks.try_push(Task{slot, 0, seq})) {
    fail("the task ring of worker " + std::to_string(w) + " was full, which it never is: its shared memory "
         "was overwritten");
  }
  slots_.issue(slot, seq, w);
  if (outstanding_[w]++ == 0) supervisor_->assigned(w);
  notify_mask_ |= w < 64 ? (1ULL << w) : ~0ULL;
}

void LoaderCore::notify_workers() {
  if (notify_mask_ == 0) return;
  for (std::uint32_t w = 0; w < layout_.workers; ++w) {
    if (notify_mask_ & (w < 64 ? (1ULL << w) : ~0ULL)) worker_channel(*arena_, layout_, w).tasks.notify();
  }
  notify_mask_ = 0;
}

void LoaderCore::issue() {
  const bool now = issue_now();
  while (now && slots_.free_count() != 0 && next_issue_ < total_batches_ && !deferred_failure_) {
    // Auto workers: slots are sized for the most workers, so with fewer a
    // worker would be handed a long queue that workers forked later could
    // not share; each owes at most kAutoOwed batches instead.
    if (tuner_ && outstanding_[least_loaded_worker()] >= kAutoOwed) break;
    if (!resumed_ahead_.empty() && resumed_ahead_.front() == next_issue_) {
      resumed_ahead_.erase(resumed_ahead_.begin());  // delivered before the checkpoint
      ++next_issue_;
      continue;
    }
    assign(slots_.take_free(), next_issue_++);
  }
  notify_workers();
  stats_.max_in_flight =
      std::max<std::uint32_t>(stats_.max_in_flight, layout_.slots - slots_.free_count());
  const bool full = slots_.free_count() == 0 && next_issue_ < total_batches_;
  if (full && slots_full_since_ns_ == 0) slots_full_since_ns_ = monotonic_ns();
  if (options_.trace) trace_slots();
}

// A worker asleep (ArenaHeader::workers_poll) costs a futex call here and a
// context switch there to wake. So while at least half the slots hold
// batches issued or ready ("ahead"), a few free slots wait for that worker
// until a quarter of the slots can go at once: one wake-up a burst, not one a
// batch (on 2 cores with 2 workers the Python handoff went from 71,000 to
// 95,000 batches/s). A worker awake gets its task at once: a slot reused soon
// is still in the caches (bursts made the C++ handoff, where workers are the
// bottleneck, 40% slower). Never a stall, as the batch the consumer waits for
// is among those ahead: ordered, every batch in [next_deliver_, next_issue_)
// holds a slot (issued or ready; those delivered before a resume are passed
// over); unordered, batches are issued in sequence order, so one of the
// epoch being read is ahead while any is. Each batch the consumer takes
// lowers `ahead` by one (ready -> held), and each completion rings the parent
// awake, so within `ahead - slots / 2 + 1` deliveries the free slots are
// issued, whether or not the consumer releases anything. With fewer than 8 slots a
// burst is one slot: nothing waits. The held-slots watchdog sees every slot
// held, when nothing is free to wait.
bool LoaderCore::issue_now() const {
  const std::uint32_t burst = layout_.slots / 4, free = slots_.free_count();
  if (free == 0 || free >= burst) return true;
  if (!worker_channel(*arena_, layout_, least_loaded_worker()).tasks.consumer_sleeps()) return true;
  const std::uint32_t ahead = layout_.slots - free - slots_.count(SlotTable::State::held);
  return ahead < layout_.slots / 2;
}

void LoaderCore::collect() {
  for (std::uint32_t w = 0; w < layout_.workers; ++w) collect_from(w);
  notify_workers();  // for batches re-issued after a skipped sample
}

void LoaderCore::collect_from(std::uint32_t w) {
  WorkerChannel& ch = worker_channel(*arena_, layout_, w);
  Completion c;
  while (ch.done.try_pop(c)) {
    if (c.status == Status::start_failed) {
      fail("worker " + std::to_string(w) + " (pid " + std::to_string(supervisor_->pids()[w]) +
           ") failed to start: " + std::string(ch.start_error, strnlen(ch.start_error, sizeof ch.start_error)));
    }
    // A completion is trusted only for a slot this worker owes: a worker that
    // scribbled on its ring must not make the parent index out of bounds.
    if (!slots_.owes(c.slot, w, c.seq)) {
      fail("worker " + std::to_string(w) + " reported a batch it was not given (slot " + std::to_string(c.slot) +
           ", sequence " + std::to_string(c.seq) + "): its shared memory was overwritten");
    }
    if (outstanding_[w] > 0) --outstanding_[w];
    if (c.status == Status::fill_failed) {
      on_fill_failed(w, c);
      continue;
    }
    on_batch_done(c.slot);
    slots_.ready(c.slot);
  }
}

// Ordered: the batches issued but not yet delivered are exactly the sequence
// numbers [next_deliver_, next_issue_) less those delivered before a resume;
// each holds a slot, so seq % (slots + resumed-ahead count) indexes them
// without collision.
std::optional<std::uint32_t> LoaderCore::pick_ready() {
  if (options_.ordered) {
    advance_delivered_prefix();
    const std::optional<std::uint32_t> slot = slots_.take_ready(next_deliver_);
    if (slot) ++next_deliver_;
    return slot;
  }
  // Unordered: any ready batch of the current epoch, oldest completion first.
  const std::uint64_t per_epoch = plan_.batches_per_epoch();
  const std::optional<std::uint32_t> slot = slots_.take_ready_in_epoch(delivered_ / per_epoch, per_epoch);
  if (!slot) return std::nullopt;
  const std::uint64_t seq = slots_.seq(*slot);
  delivered_seqs_.insert(std::upper_bound(delivered_seqs_.begin(), delivered_seqs_.end(), seq), seq);
  advance_delivered_prefix();
  return slot;
}

// next_deliver_ is the first batch not yet delivered; batches delivered past
// it (unordered, or before a resume) wait in delivered_seqs_ until it catches up.
void LoaderCore::advance_delivered_prefix() {
  while (!delivered_seqs_.empty() && delivered_seqs_.front() == next_deliver_) {
    delivered_seqs_.erase(delivered_seqs_.begin());
    ++next_deliver_;
  }
}

namespace {

// What is wrong with a field of a slot's header against what it must be, or "".
std::string field_mismatch(const FieldDesc& got, const FieldDesc& want) {
  if (std::memcmp(got.name, want.name, sizeof got.name) != 0) return "its name";
  if (got.dtype != want.dtype) return "its dtype (" + std::to_string(got.dtype) + ")";
  if (got.ndim != want.ndim) return "its number of dimensions (" + std::to_string(got.ndim) + ")";
  for (std::uint32_t k = 0; k < want.ndim; ++k) {
    if (got.shape[k] != want.shape[k]) return "its shape (dimension " + std::to_string(k) + ")";
    if (got.strides[k] != want.strides[k]) return "its strides (dimension " + std::to_string(k) + ")";
  }
  if (got.offset != want.offset) return "its offset";
  if (got.nbytes != want.nbytes) return "its size in bytes";
  return "";
}

}  // namespace

std::optional<Batch> LoaderCore::deliver(std::uint32_t slot) {
  std::byte* base = slot_base(*arena_, layout_, slot);
  const auto& h = *reinterpret_cast<const SlotHeader*>(base);
  // The slot's header lives in memory a producer could scribble on, also
  // after this check: it is read once, checked against what the options
  // make of it, and the Batch reads the parent's own copy.
  BatchHeader copy;
  const std::uint64_t seq = slots_.seq(slot);
  copy.epoch = seq / plan_.batches_per_epoch();
  copy.batch = seq % plan_.batches_per_epoch();
  copy.size = h.size;
  copy.field_count = static_cast<std::uint32_t>(options_.fields.size());
  copy.ids_offset = layout_.ids_offset;
  std::string wrong;
  if (h.seq != seq || h.epoch != copy.epoch || h.batch != copy.batch) {
    wrong = "its batch number";
  } else if (copy.size > options_.batch_size) {
    wrong = "its size (" + std::to_string(copy.size) + " samples)";
  } else if (h.field_count != copy.field_count || h.ids_offset != copy.ids_offset) {
    wrong = "its field count";
  } else {
    if (described_size_ != copy.size) {
      describe_fields(described_.fields, options_, layout_, copy.size);
      described_size_ = copy.size;
    }
    std::copy_n(described_.fields, copy.field_count, copy.fields);
    // Field by field (for the message) only where the bytes differ: the
    // arena starts zeroed, and neither side writes a dimension past ndim.
    const bool same = std::memcmp(h.fields, copy.fields, copy.field_count * sizeof(FieldDesc)) == 0;
    for (std::uint32_t f = 0; !same && wrong.empty() && f < copy.field_count; ++f) {
      wrong = field_mismatch(h.fields[f], copy.fields[f]);
      if (!wrong.empty()) wrong = "field " + std::to_string(f) + " ('" + options_.fields[f].name + "'): " + wrong;
    }
  }
  if (!wrong.empty()) {
    fail("the header of slot " + std::to_string(slot) + " (" + describe_batch(seq, slot) +
         ") was overwritten, " + wrong + ": a producer wrote outside its fields");
  }
  ++delivered_;
  if (copy.size == 0) {  // on_error = skip emptied it: nothing to hand out
    ++stats_.empty_batches;
    slots_.free(slot);
    return std::nullopt;
  }
  slots_.hold(slot);
  if (stats_.batches_delivered == 0) stats_.first_batch_ns = monotonic_ns() - created_ns_;
  ++stats_.batches_delivered;
  stats_.samples_delivered += copy.size;
  for (std::uint32_t f = 0; f < copy.field_count; ++f) stats_.bytes_delivered += copy.fields[f].nbytes;
  return Batch(std::make_shared<SlotLease>(shared_from_this(), slot, base, copy));
}

void LoaderCore::wait_for_workers(int max_sleep_ms) {
  ArenaHeader& header = arena_header(*arena_);
  auto work_waiting = [&] {
    if (released_.size_approx() > 0 || interrupted()) return true;
    for (std::uint32_t w = 0; w < layout_.workers; ++w) {
      if (!worker_channel(*arena_, layout_, w).done.empty()) return true;
    }
    return false;
  };
  const auto spin_until = Clock::now() + kSpin;
  while (Clock::now() < spin_until) {
    if (work_waiting()) return;
    cpu_relax();
  }
  // With a ready fd, a release rings only when busy_slots_ is 0: this sleep
  // must hear of one (arm()'s fence pairs with release()'s).
  if (ready_fd_ >= 0) busy_slots_.store(0, std::memory_order_relaxed);
  header.parent_sleeping.arm();
  if (!work_waiting()) {
    pollfd fds[2] = {{eventfd_, POLLIN, 0}, {supervisor_->event_fd(), POLLIN, 0}};
    int sleep_ms = supervisor_->poll_interval_ms();
    if (max_sleep_ms >= 0) sleep_ms = std::min(sleep_ms, max_sleep_ms);
    poll(fds, 2, sleep_ms);
    std::uint64_t count;
    [[maybe_unused]] ssize_t n = read(eventfd_, &count, sizeof count);
  }
  if (ready_fd_ < 0) header.parent_sleeping.disarm();  // a polling host stays armed (ready_fd)
  handle_exits();
}

// Worker exits, then the watchdog. Every error of the processes' supervision
// becomes the run's one failure.
void LoaderCore::handle_exits() {
  try {
    while (std::optional<WorkerExit> e = supervisor_->next_exit()) on_worker_exit(*e);
    supervisor_->watch(outstanding_);
  } catch (const Error& err) {
    if (failure_.empty()) fail(err.what());  // the zygote is gone, or a kill request could not reach it
    throw;
  }
}

std::optional<Batch> LoaderCore::next(std::uint64_t max_epoch, std::optional<std::chrono::milliseconds> timeout) {
  if (forked_copy()) throw Error(forked_copy_message());
  // However the call ends, a polling host's ready fd then tells the truth.
  struct Rearm {
    LoaderCore& core;
    ~Rearm() { core.rearm_ready_fd(); }
  } rearm{*this};
  if (!failure_.empty()) throw Error(failure_);
  if (stopped_) throw Error("the loader has been shut down");
  // A timeout too long for the clock (milliseconds::max(), "forever") waits
  // for as long as next() would.
  const auto now = Clock::now();
  if (timeout && *timeout >= std::chrono::duration_cast<std::chrono::milliseconds>(Clock::time_point::max() - now)) {
    timeout.reset();
  }
  const auto deadline = timeout ? now + *timeout : Clock::time_point::max();
  std::optional<Clock::time_point> wait_start;
  bool looked_again = false;
  for (;;) {
    if (interrupted()) return std::nullopt;
    reclaim_released();
    issue();
    collect();
    if (delivered_ >= total_batches_ || current_epoch() > max_epoch) return std::nullopt;
    if (auto slot = pick_ready()) {
      std::optional<Batch> batch = deliver(*slot);
      if (!batch) continue;  // every sample of it was skipped
      if (wait_start) {
        const std::uint64_t waited = elapsed_ns(*wait_start);
        stats_.consumer_wait_ns += waited;
        ++stats_.consumer_waits;
        if (options_.trace) trace_mark(TraceMark::Kind::wait, monotonic_ns() - waited, waited);
      }
      if (options_.trace) trace_slots();
      all_held_since_ns_ = 0;
      tune();
      return batch;
    }
    if (failure_due()) fail(deferred_failure_->reason);
    if (!wait_start) wait_start = Clock::now();
    int max_sleep_ms = held_wait_left_ms();
    if (timeout) {
      const auto now = Clock::now();
      if (now >= deadline) {
        if (looked_again) return std::nullopt;
        // Exits and the watchdog once, then one more look: a try_next()
        // supervises as next() does while it waits.
        handle_exits();
        looked_again = true;
        continue;
      }
      const auto left = std::min<std::int64_t>(std::chrono::ceil<std::chrono::milliseconds>(deadline - now).count(),
                                               std::numeric_limits<int>::max());
      max_sleep_ms = max_sleep_ms < 0 ? static_cast<int>(left) : std::min<int>(max_sleep_ms, static_cast<int>(left));
    }
    wait_for_workers(max_sleep_ms);
  }
}

// With every slot held by the consumer and none being released, nothing can
// be filled: after held_timeout_ms (counted across calls, so a polling host is
// told too) that is an error. Returns how long the consumer may still sleep
// for it, or -1 while some slot is not held.
int LoaderCore::held_wait_left_ms() {
  if (released_.size_approx() != 0 ||
      slots_.count(SlotTable::State::held) != layout_.slots) {
    all_held_since_ns_ = 0;
    return -1;
  }
  const std::uint64_t now = monotonic_ns();
  if (all_held_since_ns_ == 0) all_held_since_ns_ = now;
  const std::uint64_t waited_ms = (now - all_held_since_ns_) / 1'000'000ULL;
  if (waited_ms >= options_.held_timeout_ms) {
    all_held_since_ns_ = 0;
    fail_all_slots_held();
  }
  return static_cast<int>(options_.held_timeout_ms - waited_ms);
}

int LoaderCore::ready_fd() {
  if (forked_copy()) throw Error(forked_copy_message());
  if (ready_fd_ >= 0) return ready_fd_;
  OwnedLock lock;  // another Loader's zygote must not inherit it
  const int fd = epoll_create1(EPOLL_CLOEXEC);
  if (fd < 0) throw Error(std::string("epoll_create1 failed: ") + std::strerror(errno));
  // After a failure the zygote is gone: the eventfd alone, rung below, so
  // that the host's next call returns the error.
  for (int watched : {eventfd_, supervisor_->event_fd()}) {
    if (watched < 0) continue;
    epoll_event e{};
    e.events = EPOLLIN;
    e.data.fd = watched;
    if (epoll_ctl(fd, EPOLL_CTL_ADD, watched, &e) != 0) {
      const int err = errno;
      close(fd);
      throw Error(std::string("epoll_ctl failed: ") + std::strerror(err));
    }
  }
  register_fd(fd);
  ready_fd_ = fd;
  // From now on the consumer counts as asleep between calls: every
  // completion rings the eventfd (one write per batch).
  arena_header(*arena_).parent_sleeping.arm();
  ring_eventfd(eventfd_);  // readable at once: the first try_next() hands out the first batches' work
  return ready_fd_;
}

// Level-correct: after every call the eventfd is read empty and rung again
// only if the consumer's thread has something to do now: a batch to deliver,
// a completion or a release to take in, or the end or a failure to report.
// Every later event rings it itself (a completion, as parent_sleeping stays
// armed; a release, when nothing is in flight; a zygote event is readable on
// its own socket). So the fd is readable while a call would do something,
// an edge-triggered watcher gets a new edge for every such state, and a host
// that takes one batch per wake-up is never left with a ready batch unseen.
void LoaderCore::rearm_ready_fd() {
  if (ready_fd_ < 0) return;
  const std::uint32_t busy = slots_.count(SlotTable::State::issued) + slots_.count(SlotTable::State::ready);
  busy_slots_.store(busy, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_seq_cst);  // see release()
  std::uint64_t count;
  [[maybe_unused]] ssize_t n = read(eventfd_, &count, sizeof count);
  if (has_news()) ring_eventfd(eventfd_);
}

bool LoaderCore::has_news() {
  if (!failure_.empty() || stopped_ || interrupted() || delivered_ >= total_batches_) return true;
  if (released_.size_approx() != 0 || supervisor_->exit_pending()) return true;
  for (std::uint32_t w = 0; w < layout_.workers; ++w) {
    if (!worker_channel(*arena_, layout_, w).done.empty()) return true;
  }
  if (options_.ordered) {
    advance_delivered_prefix();
    return slots_.ready_at(next_deliver_) || failure_due();
  }
  const std::uint64_t per_epoch = plan_.batches_per_epoch();
  return slots_.any_ready_in_epoch(delivered_ / per_epoch, per_epoch);
}

std::string LoaderCore::forked_copy_message() const {
  return "this Loader was made by process " + std::to_string(made_in_pid_) + ", and process " +
         std::to_string(getpid()) + " is a fork of it: a forked child (or a worker) cannot take the batches of "
         "its parent's Loader; make a Loader in the child instead";
}

}  // namespace sluice::detail
