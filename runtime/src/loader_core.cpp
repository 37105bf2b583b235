#include "loader_core.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
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

}  // namespace

LoaderCore::LoaderCore(Options options)
    : options_(std::move(options)), plan_(options_), layout_(ArenaLayout::compute(options_)) {
  if (!options_.producer) throw Error("options.producer is not set: nothing would fill the batches");
  arena_ = std::make_unique<Arena>(layout_.total_bytes, "sluice-arena");
  auto* header = new (arena_->base()) ArenaHeader{};
  header->magic = kArenaMagic;
  for (std::uint32_t w = 0; w < layout_.workers; ++w) {
    new (&worker_channel(*arena_, layout_, w)) WorkerChannel{};
  }
  eventfd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (eventfd_ < 0) throw Error(std::string("eventfd failed: ") + std::strerror(errno));

  total_batches_ = options_.epochs == 0 ? std::numeric_limits<std::uint64_t>::max()
                                        : options_.epochs * plan_.batches_per_epoch();
  slot_state_.assign(layout_.slots, SlotState::free);
  slot_seq_.assign(layout_.slots, 0);
  ready_by_seq_.assign(layout_.slots, kNoSlot);
  outstanding_.assign(layout_.workers, 0);
  for (std::uint32_t s = layout_.slots; s-- > 0;) free_slots_.push_back(s);
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
  if (stopped_) return;
  stopped_ = true;
  arena_header(*arena_).stop.store(1, std::memory_order_relaxed);
  for (std::uint32_t w = 0; w < layout_.workers; ++w) worker_channel(*arena_, layout_, w).tasks.wake();
  zygote_.reset();  // the zygote kills and reaps the workers, then is reaped
}

void LoaderCore::release(std::uint32_t slot) {
  released_.enqueue(slot);
  // Wake the consumer if it sleeps in next() (the batch may be released on
  // another thread); same handshake as a worker's completion.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (!stopped_ && arena_header(*arena_).parent_sleeping.load(std::memory_order_relaxed)) {
    std::uint64_t one = 1;
    [[maybe_unused]] ssize_t n = write(eventfd_, &one, sizeof one);
  }
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
}

std::uint32_t LoaderCore::least_loaded_worker() const {
  auto it = std::min_element(outstanding_.begin(), outstanding_.end());
  return static_cast<std::uint32_t>(it - outstanding_.begin());
}

void LoaderCore::issue() {
  bool any = false;
  std::uint64_t notify_mask = 0;  // workers 0..63 get a precise wake; beyond that, all are woken
  while (!free_slots_.empty() && next_issue_ < total_batches_) {
    const std::uint32_t slot = free_slots_.back();
    free_slots_.pop_back();
    const std::uint32_t w = least_loaded_worker();
    worker_channel(*arena_, layout_, w).tasks.try_push(Task{slot, 0, next_issue_});  // never full
    slot_state_[slot] = SlotState::issued;
    slot_seq_[slot] = next_issue_;
    ++outstanding_[w];
    ++next_issue_;
    any = true;
    notify_mask |= w < 64 ? (1ULL << w) : ~0ULL;
  }
  if (!any) return;
  for (std::uint32_t w = 0; w < layout_.workers; ++w) {
    if (notify_mask & (w < 64 ? (1ULL << w) : ~0ULL)) worker_channel(*arena_, layout_, w).tasks.notify();
  }
  stats_.max_in_flight =
      std::max<std::uint32_t>(stats_.max_in_flight, layout_.slots - static_cast<std::uint32_t>(free_slots_.size()));
}

void LoaderCore::collect() {
  const std::uint64_t per_epoch = plan_.batches_per_epoch();
  for (std::uint32_t w = 0; w < layout_.workers; ++w) {
    WorkerChannel& ch = worker_channel(*arena_, layout_, w);
    Completion c;
    while (ch.done.try_pop(c)) {
      if (c.status == Status::start_failed) {
        fail("worker " + std::to_string(w) + " (pid " + std::to_string(worker_pids_[w]) +
             ") failed to start: " + ch.start_error);
      }
      --outstanding_[w];
      if (c.status == Status::fill_failed) {
        const auto& h = *reinterpret_cast<const SlotHeader*>(slot_base(*arena_, layout_, c.slot));
        fail("worker " + std::to_string(w) + " failed on epoch " + std::to_string(c.seq / per_epoch) +
             ", batch " + std::to_string(c.seq % per_epoch) + ": " + h.error);
      }
      slot_state_[c.slot] = SlotState::ready;
      if (options_.ordered) {
        ready_by_seq_[c.seq % layout_.slots] = c.slot;
      } else {
        ready_list_.push_back(c.slot);
      }
    }
  }
}

// Ordered: the batches issued but not yet delivered are exactly the sequence
// numbers [next_deliver_, next_issue_), each holding a slot, so there are at
// most `slots` of them and seq % slots indexes them without collision.
std::optional<std::uint32_t> LoaderCore::pick_ready() {
  if (options_.ordered) {
    std::uint32_t& entry = ready_by_seq_[next_deliver_ % layout_.slots];
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
    return slot;
  }
  return std::nullopt;
}

Batch LoaderCore::deliver(std::uint32_t slot) {
  std::byte* base = slot_base(*arena_, layout_, slot);
  const auto& h = *reinterpret_cast<const SlotHeader*>(base);
  // The header lives in memory a producer could scribble on; check it before
  // handing out views into the slot.
  bool sane = h.seq == slot_seq_[slot] && h.field_count == options_.fields.size() && h.ids_offset == layout_.ids_offset;
  for (std::uint32_t f = 0; sane && f < h.field_count; ++f) {
    sane = h.fields[f].offset == layout_.field_offsets[f] && h.fields[f].nbytes <= layout_.slot_bytes - h.fields[f].offset &&
           h.fields[f].ndim <= kMaxDims;
  }
  if (!sane) {
    fail("the header of slot " + std::to_string(slot) + " (batch sequence " + std::to_string(slot_seq_[slot]) +
         ") was overwritten: a producer wrote outside its fields");
  }
  slot_state_[slot] = SlotState::held;
  ++delivered_;
  ++stats_.batches_delivered;
  stats_.samples_delivered += h.size;
  for (std::uint32_t f = 0; f < h.field_count; ++f) stats_.bytes_delivered += h.fields[f].nbytes;
  return Batch(std::make_shared<SlotLease>(shared_from_this(), slot, base));
}

void LoaderCore::wait_for_workers() {
  ArenaHeader& header = arena_header(*arena_);
  auto work_waiting = [&] {
    if (released_.size_approx() > 0) return true;
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
  header.parent_sleeping.store(1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (!work_waiting()) {
    pollfd fds[2] = {{eventfd_, POLLIN, 0}, {zygote_->fd(), POLLIN, 0}};
    poll(fds, 2, kSleepMs);
    std::uint64_t count;
    [[maybe_unused]] ssize_t n = read(eventfd_, &count, sizeof count);
  }
  header.parent_sleeping.store(0, std::memory_order_relaxed);
  // A worker that exits while the loader runs is a failure (restarting it is
  // the reliability layer's job); the zygote reports it at once.
  while (auto e = zygote_->poll_exit()) {
    if (e->kind != ZygoteEvent::exited) continue;
    fail("worker " + std::to_string(e->worker) + " (pid " + std::to_string(e->pid) + ") " +
         describe_wait_status(e->status) + " with " + std::to_string(outstanding_[e->worker]) +
         " batch(es) in flight");
  }
}

std::optional<Batch> LoaderCore::next(std::uint64_t max_epoch) {
  if (!failure_.empty()) throw Error(failure_);
  if (stopped_) throw Error("the loader has been shut down");
  std::optional<Clock::time_point> wait_start;
  for (;;) {
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
