#include "loader_core.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <limits>
#include <new>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "sluice/error.h"
#include "worker.h"

namespace sluice::detail {

namespace {

using Clock = std::chrono::steady_clock;

// How long next() polls the completion rings before sleeping on the eventfd.
constexpr auto kSpin = std::chrono::microseconds(20);
// A sleeping consumer re-checks everything at least this often.
constexpr int kSleepMs = 1000;

std::uint64_t elapsed_ns(Clock::time_point since) {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - since).count());
}

void ring_eventfd(int fd) {
  std::uint64_t one = 1;
  [[maybe_unused]] ssize_t n = write(fd, &one, sizeof one);
}

void init_channel(WorkerChannel* where) {
  auto* ch = new (where) WorkerChannel{};
  ch->busy_seq.store(kIdle, std::memory_order_relaxed);
  ch->busy_position.store(kUnknownPosition, std::memory_order_relaxed);
}

}  // namespace

LoaderCore::LoaderCore(Options options)
    : options_(std::move(options)), plan_(options_), layout_(ArenaLayout::compute(options_)) {
  if (!options_.producer) throw Error("options.producer is not set: nothing would fill the batches");
  if (options_.max_retries == 0) throw Error("options.max_retries is 0: a sample must be tried at least once");
  created_ns_ = monotonic_ns();
  arena_ = std::make_unique<Arena>(layout_.total_bytes, "sluice-arena");
  auto* header = new (arena_->base()) ArenaHeader{};
  header->magic = kArenaMagic;
  new (&skip_list(*arena_, layout_)) SkipList{};
  for (std::uint32_t w = 0; w < layout_.workers; ++w) init_channel(&worker_channel(*arena_, layout_, w));
  eventfd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (eventfd_ < 0) throw Error(std::string("eventfd failed: ") + std::strerror(errno));

  total_batches_ = options_.epochs == 0 ? std::numeric_limits<std::uint64_t>::max()
                                        : options_.epochs * plan_.batches_per_epoch();
  slot_state_.assign(layout_.slots, SlotState::free);
  slot_seq_.assign(layout_.slots, 0);
  slot_worker_.assign(layout_.slots, 0);
  ready_by_seq_.assign(layout_.slots, kNoSlot);
  outstanding_.assign(layout_.workers, 0);
  kill_reason_.assign(layout_.workers, "");
  retired_fill_ns_.assign(layout_.workers, 0);
  retired_idle_ns_.assign(layout_.workers, 0);
  for (std::uint32_t s = layout_.slots; s-- > 0;) free_slots_.push_back(s);
  if (options_.resume) resume_from(*options_.resume);
}

namespace {
const char* policy_name(ShardPolicy p) { return p == ShardPolicy::pad ? "pad" : "drop"; }
}  // namespace

void LoaderCore::resume_from(const LoaderState& s) {
  auto mismatch = [](const std::string& what, const std::string& state, const std::string& now) {
    throw Error("cannot resume: the state was saved with " + what + " = " + state + " but options." + what +
                " is " + now);
  };
  const Options& o = options_;
  if (s.seed != o.seed) mismatch("seed", std::to_string(s.seed), std::to_string(o.seed));
  if (s.dataset_size != o.dataset_size) {
    mismatch("dataset_size", std::to_string(s.dataset_size), std::to_string(o.dataset_size));
  }
  if (s.batch_size != o.batch_size) mismatch("batch_size", std::to_string(s.batch_size), std::to_string(o.batch_size));
  if (s.shuffle != o.shuffle) mismatch("shuffle", s.shuffle ? "true" : "false", o.shuffle ? "true" : "false");
  if (s.drop_last != o.drop_last) mismatch("drop_last", s.drop_last ? "true" : "false", o.drop_last ? "true" : "false");
  if (s.rank != o.rank) mismatch("rank", std::to_string(s.rank), std::to_string(o.rank));
  if (s.world_size != o.world_size) mismatch("world_size", std::to_string(s.world_size), std::to_string(o.world_size));
  if (s.shard_policy != policy_name(o.shard_policy)) mismatch("shard_policy", s.shard_policy, policy_name(o.shard_policy));
  const std::uint64_t per_epoch = plan_.batches_per_epoch();
  if (s.batch > per_epoch) {
    throw Error("cannot resume: the state's batch " + std::to_string(s.batch) + " is past the epoch's " +
                std::to_string(per_epoch) + " batches");
  }
  const std::uint64_t start = s.epoch * per_epoch + s.batch;
  for (std::uint64_t b : s.delivered_ahead) {
    if (b <= s.batch || b >= per_epoch) throw Error("cannot resume: delivered_ahead holds batch " + std::to_string(b));
    resumed_ahead_.push_back(s.epoch * per_epoch + b);
  }
  std::sort(resumed_ahead_.begin(), resumed_ahead_.end());
  next_issue_ = next_deliver_ = start;
  delivered_ = start + resumed_ahead_.size();
  delivered_seqs_ = resumed_ahead_;
  // Batches skipped over also sit between next_deliver_ and next_issue_.
  ready_by_seq_.assign(layout_.slots + resumed_ahead_.size(), kNoSlot);
  skip_samples(s.skipped_samples);
}

LoaderState LoaderCore::state() const {
  LoaderState s;
  s.seed = options_.seed;
  s.dataset_size = options_.dataset_size;
  s.batch_size = options_.batch_size;
  s.shuffle = options_.shuffle;
  s.drop_last = options_.drop_last;
  s.rank = options_.rank;
  s.world_size = options_.world_size;
  s.shard_policy = policy_name(options_.shard_policy);
  const std::uint64_t per_epoch = plan_.batches_per_epoch();
  s.epoch = next_deliver_ / per_epoch;
  s.batch = next_deliver_ % per_epoch;
  for (std::uint64_t seq : delivered_seqs_) s.delivered_ahead.push_back(seq - s.epoch * per_epoch);
  s.skipped_samples = stats_.skipped_samples;
  return s;
}

LoaderCore::~LoaderCore() {
  shutdown();
  if (eventfd_ >= 0) close(eventfd_);
}

void LoaderCore::start() {
  zygote_ = std::make_unique<Zygote>(
      [this](std::uint32_t id) {
        WorkerEnv env{*arena_, layout_, plan_, options_, eventfd_};
        worker_main(env, id);
      },
      layout_.workers);
  for (std::uint32_t w = 0; w < layout_.workers; ++w) worker_pids_.push_back(zygote_->spawn(w));
}

void LoaderCore::shutdown() {
  if (stopped_.exchange(true)) return;
  arena_header(*arena_).stop.store(1, std::memory_order_relaxed);
  for (std::uint32_t w = 0; w < layout_.workers; ++w) worker_channel(*arena_, layout_, w).tasks.wake();
  zygote_.reset();  // the zygote kills and reaps the workers, then is reaped
}

void LoaderCore::release(std::uint32_t slot) {
  released_.enqueue(slot);
  // Wake the consumer if it sleeps in next() (the batch may be released on
  // another thread); same handshake as a worker's completion.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (!stopped_ && arena_header(*arena_).parent_sleeping.load(std::memory_order_relaxed)) ring_eventfd(eventfd_);
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
  throw Error(message);
}

void LoaderCore::reclaim_released() {
  std::uint32_t slot;
  while (released_.try_dequeue(slot)) {
    slot_state_[slot] = SlotState::free;
    free_slots_.push_back(slot);
  }
  if (slots_full_since_ns_ != 0 && !free_slots_.empty()) {
    stats_.slots_full_ns += monotonic_ns() - slots_full_since_ns_;
    slots_full_since_ns_ = 0;
  }
}

Stats LoaderCore::stats() const {
  Stats s = stats_;
  for (std::uint32_t w = 0; w < layout_.workers; ++w) {
    const WorkerChannel& ch = worker_channel(*arena_, layout_, w);
    s.worker_fill_ns += retired_fill_ns_[w] + ch.fill_ns.load(std::memory_order_relaxed);
    s.worker_idle_ns += retired_idle_ns_[w] + ch.idle_ns.load(std::memory_order_relaxed);
  }
  if (slots_full_since_ns_ != 0) s.slots_full_ns += monotonic_ns() - slots_full_since_ns_;
  return s;
}

std::uint32_t LoaderCore::least_loaded_worker() const {
  auto it = std::min_element(outstanding_.begin(), outstanding_.end());
  return static_cast<std::uint32_t>(it - outstanding_.begin());
}

// Gives batch `seq` in `slot` to the least loaded worker. Its ring never
// fills: a worker never owes more batches than there are slots.
void LoaderCore::assign(std::uint32_t slot, std::uint64_t seq) {
  const std::uint32_t w = least_loaded_worker();
  worker_channel(*arena_, layout_, w).tasks.try_push(Task{slot, 0, seq});
  slot_state_[slot] = SlotState::issued;
  slot_seq_[slot] = seq;
  slot_worker_[slot] = w;
  ++outstanding_[w];
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
  while (!free_slots_.empty() && next_issue_ < total_batches_) {
    if (!resumed_ahead_.empty() && resumed_ahead_.front() == next_issue_) {
      resumed_ahead_.erase(resumed_ahead_.begin());  // delivered before the checkpoint
      ++next_issue_;
      continue;
    }
    const std::uint32_t slot = free_slots_.back();
    free_slots_.pop_back();
    assign(slot, next_issue_++);
  }
  notify_workers();
  stats_.max_in_flight =
      std::max<std::uint32_t>(stats_.max_in_flight, layout_.slots - static_cast<std::uint32_t>(free_slots_.size()));
  const bool full = free_slots_.empty() && next_issue_ < total_batches_;
  if (full && slots_full_since_ns_ == 0) slots_full_since_ns_ = monotonic_ns();
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
      fail("worker " + std::to_string(w) + " (pid " + std::to_string(worker_pids_[w]) +
           ") failed to start: " + ch.start_error);
    }
    --outstanding_[w];
    deaths_since_progress_ = 0;
    if (c.status == Status::fill_failed) {
      on_fill_failed(w, c);
      continue;
    }
    slot_state_[c.slot] = SlotState::ready;
    if (options_.ordered) {
      ready_by_seq_[c.seq % ready_by_seq_.size()] = c.slot;
    } else {
      ready_list_.push_back(c.slot);
    }
  }
}

std::string LoaderCore::describe_batch(std::uint64_t seq, std::uint32_t slot) const {
  const std::uint64_t per_epoch = plan_.batches_per_epoch();
  std::string text = "epoch " + std::to_string(seq / per_epoch) + ", batch " + std::to_string(seq % per_epoch);
  const auto& h = *reinterpret_cast<const SlotHeader*>(slot_base(*arena_, layout_, slot));
  const auto* ids = reinterpret_cast<const std::uint64_t*>(slot_base(*arena_, layout_, slot) + layout_.ids_offset);
  if (h.seq == seq && h.size > 0) {
    text += " (samples " + std::to_string(ids[0]);
    if (h.size > 1) text += " to " + std::to_string(ids[h.size - 1]);
    text += ")";
  }
  return text;
}

// The producer threw. A producer is deterministic, so retrying cannot help:
// the policy applies at once to the sample it was making (or, if it never
// said, to the whole batch).
void LoaderCore::on_fill_failed(std::uint32_t w, const Completion& c) {
  std::byte* base = slot_base(*arena_, layout_, c.slot);
  const auto& h = *reinterpret_cast<const SlotHeader*>(base);
  const auto* ids = reinterpret_cast<const std::uint64_t*>(base + layout_.ids_offset);
  const bool named = h.failed_position < h.size;
  std::string where = named ? "sample " + std::to_string(ids[h.failed_position]) + " (" +
                                  describe_batch(c.seq, c.slot) + ")"
                            : describe_batch(c.seq, c.slot);
  if (options_.on_error == OnError::fail) {
    fail("worker " + std::to_string(w) + " failed on " + where + ": " + h.error);
  }
  if (named) {
    skip_samples({ids + h.failed_position, 1});
  } else {
    skip_samples({ids, h.size});
  }
  ++stats_.batches_retried;
  assign(c.slot, c.seq);
}

void LoaderCore::skip_samples(std::span<const std::uint64_t> samples) {
  SkipList& list = skip_list(*arena_, layout_);
  std::uint32_t count = list.count.load(std::memory_order_relaxed);
  for (std::uint64_t id : samples) {
    if (std::find(stats_.skipped_samples.begin(), stats_.skipped_samples.end(), id) !=
        stats_.skipped_samples.end()) {
      continue;
    }
    if (count == kMaxSkipped) {
      fail("more than " + std::to_string(kMaxSkipped) + " samples failed and were skipped; the data or the "
           "pipeline is broken");
    }
    list.ids[count++] = id;
    stats_.skipped_samples.push_back(id);
  }
  // Publishes the new ids (see SkipList); every task pushed after this is a
  // release too, so a worker that pops it sees them.
  list.count.store(count, std::memory_order_release);
}

void LoaderCore::on_worker_exit(const ZygoteEvent& e) {
  const std::uint32_t w = e.worker;
  collect_from(w);  // completions it pushed before dying still count
  WorkerChannel& ch = worker_channel(*arena_, layout_, w);
  const std::string why = kill_reason_[w].empty() ? describe_wait_status(e.status) : kill_reason_[w];
  kill_reason_[w].clear();
  ++stats_.worker_restarts;
  if (++deaths_since_progress_ > layout_.workers * (options_.max_retries + 1) + 2) {
    fail("workers keep dying without finishing a batch; the last, worker " + std::to_string(w) + " (pid " +
         std::to_string(e.pid) + "), " + why);
  }

  // Blame the batch it was filling, and the sample if the producer named it.
  const std::uint64_t busy = ch.busy_seq.load(std::memory_order_relaxed);
  const std::uint32_t position = ch.busy_position.load(std::memory_order_relaxed);
  for (std::uint32_t slot = 0; busy != kIdle && slot < layout_.slots; ++slot) {
    if (slot_state_[slot] != SlotState::issued || slot_seq_[slot] != busy || slot_worker_[slot] != w) continue;
    std::byte* base = slot_base(*arena_, layout_, slot);
    const auto& h = *reinterpret_cast<const SlotHeader*>(base);
    const auto* ids = reinterpret_cast<const std::uint64_t*>(base + layout_.ids_offset);
    const bool named = h.seq == busy && position < h.size;
    const std::uint32_t tries = named ? ++sample_failures_[ids[position]] : ++batch_failures_[busy];
    if (tries < options_.max_retries) break;
    std::string culprit = named ? "sample " + std::to_string(ids[position]) + " (" + describe_batch(busy, slot) + ")"
                                : describe_batch(busy, slot);
    if (options_.on_error == OnError::fail) {
      fail(culprit + " failed " + std::to_string(tries) + " times; the last time worker " + std::to_string(w) +
           " (pid " + std::to_string(e.pid) + ") " + why);
    }
    if (named) {
      skip_samples({ids + position, 1});
    } else {
      skip_samples({ids, h.seq == busy ? h.size : 0});
    }
    break;
  }

  // A fresh channel (the dead worker can no longer touch it), a fresh worker,
  // and every batch the old one owed goes out again.
  retired_fill_ns_[w] += ch.fill_ns.load(std::memory_order_relaxed);
  retired_idle_ns_[w] += ch.idle_ns.load(std::memory_order_relaxed);
  init_channel(&ch);
  outstanding_[w] = 0;
  worker_pids_[w] = zygote_->spawn(w);
  std::vector<std::pair<std::uint64_t, std::uint32_t>> owed;
  for (std::uint32_t slot = 0; slot < layout_.slots; ++slot) {
    if (slot_state_[slot] == SlotState::issued && slot_worker_[slot] == w) owed.emplace_back(slot_seq_[slot], slot);
  }
  std::sort(owed.begin(), owed.end());
  for (const auto& [seq, slot] : owed) assign(slot, seq);
  stats_.batches_retried += owed.size();
  notify_workers();
}

void LoaderCore::check_timeouts() {
  if (options_.batch_timeout_ms == 0) return;
  const std::uint64_t now = monotonic_ns();
  const std::uint64_t limit = std::uint64_t{options_.batch_timeout_ms} * 1'000'000ULL;
  for (std::uint32_t w = 0; w < layout_.workers; ++w) {
    const WorkerChannel& ch = worker_channel(*arena_, layout_, w);
    const std::uint64_t busy = ch.busy_seq.load(std::memory_order_relaxed);
    if (busy == kIdle || !kill_reason_[w].empty()) continue;
    const std::uint64_t since = ch.busy_since_ns.load(std::memory_order_relaxed);
    if (now <= since || now - since < limit) continue;
    const std::uint64_t per_epoch = plan_.batches_per_epoch();
    kill_reason_[w] = "timed out after " + std::to_string(options_.batch_timeout_ms) + " ms on epoch " +
                      std::to_string(busy / per_epoch) + ", batch " + std::to_string(busy % per_epoch) +
                      " (options.batch_timeout_ms) and was killed";
    zygote_->kill_worker(w);
  }
}

// Private memory of a process: resident pages less those shared with others
// (the arena, libraries), from /proc/PID/statm. 0 if it cannot be read.
std::uint64_t private_bytes(pid_t pid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/statm", static_cast<int>(pid));
  std::FILE* f = std::fopen(path, "r");
  if (!f) return 0;
  unsigned long long size = 0, resident = 0, shared = 0;
  int got = std::fscanf(f, "%llu %llu %llu", &size, &resident, &shared);
  std::fclose(f);
  if (got != 3 || resident < shared) return 0;
  return (resident - shared) * static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
}

// At most every 100 ms: a worker over worker_memory_limit_mb is killed; its
// death is then handled like a crash, blamed on the sample it was making.
void LoaderCore::check_memory() {
  if (options_.worker_memory_limit_mb == 0) return;
  const std::uint64_t now = monotonic_ns();
  if (now - last_memory_check_ns_ < 100'000'000ULL) return;
  last_memory_check_ns_ = now;
  const std::uint64_t limit = options_.worker_memory_limit_mb << 20;
  for (std::uint32_t w = 0; w < layout_.workers; ++w) {
    if (!kill_reason_[w].empty()) continue;
    const std::uint64_t used = private_bytes(worker_pids_[w]);
    if (used <= limit) continue;
    kill_reason_[w] = "used " + std::to_string(used >> 20) + " MiB of private memory, over options.worker_memory_limit_mb = " +
                      std::to_string(options_.worker_memory_limit_mb) + ", and was killed";
    zygote_->kill_worker(w);
  }
}

// Ordered: the batches issued but not yet delivered are exactly the sequence
// numbers [next_deliver_, next_issue_) less those delivered before a resume;
// each holds a slot, so seq % (slots + resumed-ahead count) indexes them
// without collision.
std::optional<std::uint32_t> LoaderCore::pick_ready() {
  if (options_.ordered) {
    advance_delivered_prefix();
    std::uint32_t& entry = ready_by_seq_[next_deliver_ % ready_by_seq_.size()];
    if (entry == kNoSlot) return std::nullopt;
    std::uint32_t slot = std::exchange(entry, kNoSlot);
    ++next_deliver_;
    return slot;
  }
  // Unordered: any ready batch of the current epoch, oldest completion first.
  const std::uint64_t epoch = delivered_ / plan_.batches_per_epoch();
  for (auto it = ready_list_.begin(); it != ready_list_.end(); ++it) {
    if (slot_seq_[*it] / plan_.batches_per_epoch() != epoch) continue;
    std::uint32_t slot = *it;
    ready_list_.erase(it);
    const std::uint64_t seq = slot_seq_[slot];
    delivered_seqs_.insert(std::upper_bound(delivered_seqs_.begin(), delivered_seqs_.end(), seq), seq);
    advance_delivered_prefix();
    return slot;
  }
  return std::nullopt;
}

// next_deliver_ is the first batch not yet delivered; batches delivered past
// it (unordered, or before a resume) wait in delivered_seqs_ until it catches up.
void LoaderCore::advance_delivered_prefix() {
  while (!delivered_seqs_.empty() && delivered_seqs_.front() == next_deliver_) {
    delivered_seqs_.erase(delivered_seqs_.begin());
    ++next_deliver_;
  }
}

Batch LoaderCore::deliver(std::uint32_t slot) {
  std::byte* base = slot_base(*arena_, layout_, slot);
  const auto& h = *reinterpret_cast<const SlotHeader*>(base);
  // The header lives in memory a producer could scribble on; check it before
  // handing out views into the slot.
  bool sane = h.seq == slot_seq_[slot] && h.field_count == options_.fields.size() &&
              h.ids_offset == layout_.ids_offset && h.size <= options_.batch_size;
  for (std::uint32_t f = 0; sane && f < h.field_count; ++f) {
    const FieldDesc& d = h.fields[f];
    sane = d.offset == layout_.field_offsets[f] && d.nbytes == std::uint64_t{h.size} * layout_.sample_bytes[f] &&
           d.ndim >= 1 && d.ndim <= kMaxDims;
  }
  if (!sane) {
    fail("the header of slot " + std::to_string(slot) + " (" + describe_batch(slot_seq_[slot], slot) +
         ") was overwritten: a producer wrote outside its fields");
  }
  slot_state_[slot] = SlotState::held;
  if (stats_.batches_delivered == 0) stats_.first_batch_ns = monotonic_ns() - created_ns_;
  ++delivered_;
  ++stats_.batches_delivered;
  stats_.samples_delivered += h.size;
  for (std::uint32_t f = 0; f < h.field_count; ++f) stats_.bytes_delivered += h.fields[f].nbytes;
  return Batch(std::make_shared<SlotLease>(shared_from_this(), slot, base));
}

void LoaderCore::wait_for_workers() {
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
    __builtin_ia32_pause();
  }
  int sleep_ms = kSleepMs;
  if (options_.batch_timeout_ms != 0) {
    sleep_ms = std::min<int>(sleep_ms, std::max<int>(1, static_cast<int>(options_.batch_timeout_ms / 4)));
  }
  if (options_.worker_memory_limit_mb != 0) sleep_ms = std::min(sleep_ms, 100);
  header.parent_sleeping.store(1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (!work_waiting()) {
    pollfd fds[2] = {{eventfd_, POLLIN, 0}, {zygote_->fd(), POLLIN, 0}};
    poll(fds, 2, sleep_ms);
    std::uint64_t count;
    [[maybe_unused]] ssize_t n = read(eventfd_, &count, sizeof count);
  }
  header.parent_sleeping.store(0, std::memory_order_relaxed);
  for (;;) {
    std::optional<ZygoteEvent> e;
    try {
      e = zygote_->poll_exit();
    } catch (const Error& err) {
      fail(err.what());  // the zygote itself is gone: no worker can be replaced
    }
    if (!e) break;
    if (e->kind == ZygoteEvent::exited) on_worker_exit(*e);
  }
  check_timeouts();
  check_memory();
}

std::optional<Batch> LoaderCore::next(std::uint64_t max_epoch) {
  if (!failure_.empty()) throw Error(failure_);
  if (stopped_) throw Error("the loader has been shut down");
  std::optional<Clock::time_point> wait_start;
  for (;;) {
    if (interrupted()) return std::nullopt;
    check_memory();
    reclaim_released();
    issue();
    collect();
    if (delivered_ >= total_batches_ || current_epoch() > max_epoch) return std::nullopt;
    if (auto slot = pick_ready()) {
      if (wait_start) {
        stats_.consumer_wait_ns += elapsed_ns(*wait_start);
        ++stats_.consumer_waits;
      }
      return deliver(*slot);
    }
    if (!wait_start) wait_start = Clock::now();
    wait_for_workers();
  }
}

}  // namespace sluice::detail
