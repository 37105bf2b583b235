#include "sluice/cuda/host_backend.h"

#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <new>
#include <thread>

namespace sluice::cuda {

namespace {

constexpr std::align_val_t kBufferAlignment{256};

// A stream: one thread running queued work in order. Destruction runs what
// is queued, then joins.
class HostStream {
 public:
  HostStream() : thread_([this] { loop(); }) {}

  ~HostStream() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    cv_.notify_one();
    thread_.join();
  }

  void push(std::function<void()> fn) {
    {
      std::lock_guard lock(mutex_);
      queue_.push_back(std::move(fn));
    }
    cv_.notify_one();
  }

 private:
  void loop() {
    for (;;) {
      std::function<void()> fn;
      {
        std::unique_lock lock(mutex_);
        cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;  // stopping, and everything queued has run
        fn = std::move(queue_.front());
        queue_.pop_front();
      }
      fn();
    }
  }

  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::thread thread_;  // last: starts once the members above exist
};

// The point a stream reaches when it runs the work queued by one record():
// set once, by that stream's thread; waited for by anyone.
class Signal {
 public:
  void set() {
    {
      std::lock_guard lock(mutex_);
      done_ = true;
    }
    cv_.notify_all();
  }
  void wait() {
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [&] { return done_; });
  }
  bool ready() {
    std::lock_guard lock(mutex_);
    return done_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false;
};

// An event: the completion of the work captured by its latest record().
class HostEvent {
 public:
  std::shared_ptr<Signal> captured() const {
    std::lock_guard lock(mutex_);
    return captured_;
  }
  void set(std::shared_ptr<Signal> s) {
    std::lock_guard lock(mutex_);
    captured_ = std::move(s);
  }

 private:
  mutable std::mutex mutex_;
  std::shared_ptr<Signal> captured_;  // null: never recorded, hence complete
};

HostStream* as_stream(StreamHandle s) { return static_cast<HostStream*>(s); }
HostEvent* as_event(EventHandle e) { return static_cast<HostEvent*>(e); }

}  // namespace

void* HostBackend::allocate(std::size_t bytes) { return ::operator new(bytes, kBufferAlignment); }

void HostBackend::deallocate(void* p) noexcept {
  if (p) ::operator delete(p, kBufferAlignment);
}

StreamHandle HostBackend::create_stream() { return new HostStream(); }

void HostBackend::destroy_stream(StreamHandle stream) noexcept { delete as_stream(stream); }

EventHandle HostBackend::create_event() { return new HostEvent(); }

void HostBackend::destroy_event(EventHandle event) noexcept { delete as_event(event); }

void HostBackend::enqueue(StreamHandle stream, std::function<void()> fn) {
  if (stream) {
    as_stream(stream)->push(std::move(fn));
  } else {
    fn();
  }
}

void HostBackend::copy_async(void* dst, const void* src, std::size_t bytes, StreamHandle stream) {
  enqueue(stream, [=] { std::memcpy(dst, src, bytes); });
}

void HostBackend::normalize_async(const NormalizeJob& job, StreamHandle stream) {
  enqueue(stream, [job] { normalize_on_host(job); });
}

void HostBackend::record(EventHandle event, StreamHandle stream) {
  auto signal = std::make_shared<Signal>();
  as_event(event)->set(signal);
  enqueue(stream, [signal] { signal->set(); });
}

void HostBackend::wait(StreamHandle stream, EventHandle event) {
  std::shared_ptr<Signal> captured = as_event(event)->captured();
  if (!captured) return;
  enqueue(stream, [captured] { captured->wait(); });
}

bool HostBackend::query(EventHandle event) {
  std::shared_ptr<Signal> captured = as_event(event)->captured();
  return !captured || captured->ready();
}

void HostBackend::synchronize(EventHandle event) {
  std::shared_ptr<Signal> captured = as_event(event)->captured();
  if (captured) captured->wait();
}

}  // namespace sluice::cuda
