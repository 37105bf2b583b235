// Internal: runs one job at a time on a thread of its own, so that the slow
// end of a shard (fsync, rename, upload, the manifest) overlaps the writing
// of the next one.
//
//   Publisher p;
//   p.submit([] { ...publish shard N... });   // waits for shard N-1's job first
//   ...write shard N+1...
//   p.wait();                                 // rethrows a failed job's error
//
// Ordering: submit() joins the previous job before it starts the next, so
// jobs run one after another, in submission order, and at most one runs while
// the caller works; what a job did happens-before the return of the next
// submit() or wait() (thread join). A job's exception is kept and rethrown by
// the next submit() or wait(), once; later jobs are then not started.
//
// Fork: the thread exists only while a job runs; the writer's callers fork
// their workers (through the zygote) before the first shard is published.
// Thread safety: a Publisher is used from one thread. The destructor waits
// for the running job and drops its error.
#pragma once

#include <exception>
#include <functional>
#include <thread>

namespace sluice::io::detail {

class Publisher {
 public:
  Publisher() = default;
  ~Publisher() {
    if (thread_.joinable()) thread_.join();
  }
  Publisher(const Publisher&) = delete;
  Publisher& operator=(const Publisher&) = delete;

  void submit(std::function<void()> job) {
    wait();
    thread_ = std::thread([this, job = std::move(job)] {
      try {
        job();
      } catch (...) {
        error_ = std::current_exception();  // read after join only
      }
    });
  }

  void wait() {
    if (thread_.joinable()) thread_.join();
    if (error_) {
      std::exception_ptr e = error_;
      error_ = nullptr;
      std::rethrow_exception(e);
    }
  }

 private:
  std::thread thread_;
  std::exception_ptr error_;
};

}  // namespace sluice::io::detail
