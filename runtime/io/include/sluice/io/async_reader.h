// sluice/io/async_reader.h: a worker's read-ahead over a RecordSource, on its
// own libuv loop.
//
// The caller enqueues the sample ids it will need (the samples of the batches
// its worker owns, and of the next ones) and takes them back in the same
// order with next(). Up to `window` reads are in flight or completed ahead of
// the caller, so the transform of one sample runs while later ones are read.
// Each window slot owns a scratch buffer allocated once (and grown only for a
// sample larger than it); a sample is never buffered beyond its own bytes.
//
// I/O: reads from open shards (TFRecord, tar) are uv_fs_read on a descriptor
// kept open per file; whole-file samples (FileSource) run open, fstat, read and
// close on libuv's thread pool, files_per_job consecutive samples per pool job
// (one wake-up and one completion per group rather than per file). The window
// is refilled a group at a time: after the caller has taken files_per_job
// samples, or at once when nothing is in flight ahead of it. The loop runs only inside next(),
// which first collects completions and refills the window, then blocks until
// the sample it returns is ready; requests already handed to the thread pool
// progress meanwhile.
//
// Thread pool: libuv's pool is process-wide, sized from UV_THREADPOOL_SIZE when
// first used. The first AsyncReader constructed in a process sets that
// variable to ReaderOptions::io_threads, or to the number of CPUs when that is
// 0 (unless it is already set in the
// environment, which wins), so construct readers after fork(), in the worker,
// before anything else in that process uses libuv's pool. libuv restarts its
// pool in a forked child, so every worker gets its own pool of that size.
//
// Errors: with on_error = fail, next() throws sluice::Error naming the file and
// byte offset or record (missing file, short read, corrupt record). With skip,
// next() returns the sample with skipped = true and its reason, and skips()
// keeps the count and ids.
//
// Thread safety: none. One AsyncReader per thread; create it in the process
// that uses it (a libuv loop must not cross fork()).
#pragma once

#include "sluice/export.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "sluice/io/skip_log.h"
#include "sluice/io/record_source.h"

namespace sluice::io {

struct SLUICE_API ReaderOptions {
  std::uint32_t window = 32;                 // reads in flight or ready ahead of next()
  std::size_t slot_bytes = 256 * 1024;       // initial scratch bytes per window slot
  std::uint32_t io_threads = 0;              // UV_THREADPOOL_SIZE for this process; 0: one per CPU
  std::uint32_t files_per_job = 32;          // whole files per pool job (at most window / 2)
  OnError on_error = OnError::fail;
};

class SLUICE_API AsyncReader {
 public:
  AsyncReader(std::shared_ptr<const RecordSource> source, ReaderOptions options = {});
  ~AsyncReader();  // waits for reads in flight, closes its descriptors
  AsyncReader(const AsyncReader&) = delete;
  AsyncReader& operator=(const AsyncReader&) = delete;

  // Appends ids (each < source.size()) to the read queue. May allocate.
  void enqueue(std::span<const std::uint64_t> ids);
  void enqueue(std::uint64_t id) { enqueue(std::span<const std::uint64_t>(&id, 1)); }

  // The next enqueued sample, in enqueue order, or nullptr when none is left.
  // The Sample and its bytes stay valid until the next call to next().
  const Sample* next();

  // Ids enqueued and not yet returned by next().
  std::size_t pending() const;
  const SkipLog& skips() const { return skips_; }
  const RecordSource& source() const { return *source_; }

 private:
  struct Impl;
  std::shared_ptr<const RecordSource> source_;
  std::unique_ptr<Impl> impl_;
  SkipLog skips_;
};

}  // namespace sluice::io
