#include "sluice/cuda/stage.h"

#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <span>
#include <thread>

#include "buffer_lease.h"
#include "sluice/cuda/cuda_backend.h"
#include "sluice/cuda/host_backend.h"
#include "sluice/error.h"
#include "sluice/loader.h"
#include "staged_layout.h"
#include "staging_ring.h"

namespace sluice::cuda {

namespace detail {

// The Stage's state, shared by the consumer and the staging thread.
//
// The staging thread is the only caller of the Loader and of the ring's
// staging-thread methods; it hands staged entries to the consumer through
// ready_ (guarded by mutex_), which is what makes an entry's contents visible
// to the consumer.
class StageCore {
 public:
  StageCore(Loader& loader, StageOptions options, std::shared_ptr<Backend> backend, std::string note)
      : loader_(loader), options_(std::move(options)), backend_(std::move(backend)), note_(std::move(note)) {
    if (options_.depth == 0) throw Error("StageOptions::depth must be at least 1");
    const Options& lo = loader_.options();
    host_slot_budget_ = loader_.slots() - 1;
    ring_ = std::make_shared<StagingRing>(backend_, plan_staged_layout(lo, options_.normalize), options_.depth);
    arena_ = loader_.memory();
    backend_->register_host(arena_);
    try {
      thread_ = std::thread([this] { stage_loop(); });
    } catch (...) {
      backend_->unregister_host(arena_);
      throw;
    }
  }

  ~StageCore() {
    bool finished = false;
    {
      std::lock_guard lock(mutex_);
      finished = finished_;
    }
    // The run is not over: end it (the thread may be blocked in Loader::next(),
    // and batches it pulled but never delivered are lost to the Loader anyway).
    if (!finished) loader_.interrupt();
    ring_->close();
    thread_.join();
    for (std::size_t e : ready_) ring_->recycle_unread(e);
    ready_.clear();
    try {
      ring_->release_host_batches(0);  // every copy from the arena has run
    } catch (...) {
    }
    backend_->unregister_host(arena_);
  }

  std::optional<DeviceBatch> next() {
    std::unique_lock lock(mutex_);
    if (ready_.empty() && !finished_) {
      if (ring_->consumer_held() == ring_->depth()) {
        throw Error("Stage::next(): all " + std::to_string(ring_->depth()) +
                    " device buffers are held by the trainer; release a DeviceBatch first, or raise "
                    "StageOptions::depth");
      }
      const auto start = std::chrono::steady_clock::now();
      ready_cv_.wait(lock, [&] { return !ready_.empty() || finished_; });
      stats_.consumer_wait_ns += static_cast<std::uint64_t>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count());
      ++stats_.consumer_waits;
    }
    if (ready_.empty()) {
      if (error_) std::rethrow_exception(error_);
      return std::nullopt;
    }
    const std::size_t e = ready_.front();
    ready_.pop_front();
    ++stats_.batches_delivered;
    lock.unlock();
    auto lease = std::make_shared<BufferLease>(ring_, e, options_.consumer_stream);
    backend_->wait(options_.consumer_stream, ring_->entry(e).ready);
    return DeviceBatch(std::move(lease));
  }

  DeviceSpec device() const { return backend_->device(); }
  const std::string& note() const { return note_; }

  StageStats stats() const {
    std::lock_guard lock(mutex_);
    return stats_;
  }

 private:
  void stage_loop() {
    try {
      backend_->bind_thread();
      for (;;) {
        const std::optional<std::size_t> e = ring_->acquire();
        if (!e) break;
        ring_->release_host_batches(host_slot_budget_);  // so that Loader::next() can always proceed
        std::optional<Batch> host = loader_.next();
        if (!host) {
          ring_->recycle_unread(*e);
          break;
        }
        const std::size_t bytes = ring_->stage(*e, std::move(*host));
        {
          std::lock_guard lock(mutex_);
          ready_.push_back(*e);
          stats_.bytes_staged += bytes;
        }
        ready_cv_.notify_one();
      }
      ring_->release_host_batches(0);
    } catch (...) {
      std::lock_guard lock(mutex_);
      error_ = std::current_exception();
    }
    {
      std::lock_guard lock(mutex_);
      finished_ = true;
    }
    ready_cv_.notify_all();
  }

  Loader& loader_;
  const StageOptions options_;
  const std::shared_ptr<Backend> backend_;
  const std::string note_;
  std::size_t host_slot_budget_ = 0;
  std::shared_ptr<StagingRing> ring_;
  std::span<std::byte> arena_;

  mutable std::mutex mutex_;
  std::condition_variable ready_cv_;
  std::deque<std::size_t> ready_;  // staged entries, in Loader order
  bool finished_ = false;          // the staging thread has stopped
  std::exception_ptr error_;       // why it stopped early
  StageStats stats_;

  std::thread thread_;
};

}  // namespace detail

namespace {

std::shared_ptr<Backend> make_backend(DeviceSpec spec) {
  if (spec.kind == DeviceKind::cpu) return std::make_shared<HostBackend>();
  return make_cuda_backend(spec.ordinal);
}

}  // namespace

Stage::Stage(Loader& loader, StageOptions options) {
  ResolvedDevice resolved = resolve_device(options.device);
  core_ = std::make_unique<detail::StageCore>(loader, std::move(options), make_backend(resolved.spec),
                                              std::move(resolved.note));
}

Stage::Stage(Loader& loader, StageOptions options, std::shared_ptr<Backend> backend) {
  if (!backend) throw Error("Stage: no backend given");
  core_ = std::make_unique<detail::StageCore>(loader, std::move(options), std::move(backend), std::string());
}

Stage::~Stage() = default;

std::optional<DeviceBatch> Stage::next() { return core_->next(); }

void Stage::run(const std::function<void(DeviceBatch&)>& fn) {
  while (std::optional<DeviceBatch> batch = core_->next()) fn(*batch);
}

DeviceSpec Stage::device() const { return core_->device(); }
const std::string& Stage::note() const { return core_->note(); }
StageStats Stage::stats() const { return core_->stats(); }

}  // namespace sluice::cuda
