#include "sluice/io/async_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uv.h>
#if SLUICE_IO_URING
#include <liburing.h>
#endif

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <string>
#include <thread>
#include <vector>

#include "file_util.h"
#include "sluice/error.h"

namespace sluice::io {
namespace {

// Sets UV_THREADPOOL_SIZE once per process (a forked child is a new process:
// libuv restarts its pool there and reads the variable again). An explicit
// setting in the environment wins.
void size_thread_pool(std::uint32_t threads) {
  static pid_t configured_in = 0;
  if (configured_in == ::getpid()) return;
  configured_in = ::getpid();
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  if (std::getenv("UV_THREADPOOL_SIZE") == nullptr)
    ::setenv("UV_THREADPOOL_SIZE", std::to_string(threads).c_str(), 1);
}

}  // namespace

struct AsyncReader::Impl {
  // One window position: a scratch buffer and the request filling it.
  struct Slot {
    detail::ScratchBuffer buf;     // pages faulted in when allocated
    SampleLocation where;
    const std::string* path = nullptr;
    int fd = -1;                  // shard reads: the cached descriptor
    std::uint64_t length = 0;     // bytes wanted (whole files: known after fstat)
    std::uint64_t got = 0;
    int err = 0;                  // a negative errno / uv error code
    const char* failed_call = ""; // what failed: "open", "read", ...
    bool done = false;
    bool in_flight = false;
    uv_fs_t fs;
    Impl* owner = nullptr;

    std::byte* data() const { return buf.data(); }
    void reserve(std::size_t n) {
      if (n <= buf.size()) return;
      std::size_t cap = std::max<std::size_t>(buf.size(), 4096);
      while (cap < n) cap *= 2;
      buf = detail::ScratchBuffer(cap);
    }
  };

  // Whole files: one thread-pool job reads the files of `count` consecutive
  // slots starting at sequence `first`. A job is stored at jobs[first % window].
  struct Job {
    uv_work_t work;
    Impl* owner = nullptr;
    std::uint64_t first = 0;
    std::uint32_t count = 0;
  };

  const RecordSource& source;
  ReaderOptions options;
  uv_loop_t loop;
  std::vector<Slot> slots;
  std::vector<Job> jobs;
  std::uint32_t files_per_job;
  std::deque<std::uint64_t> queue;  // enqueued, not yet issued
  std::uint64_t issued = 0;         // sequence numbers: slot = seq % window
  std::uint64_t delivered = 0;
  bool holding = false;             // the caller holds slot (delivered - 1)
  int in_flight = 0;
  std::vector<detail::Fd> fds;      // per source file, opened on first use
  std::vector<int> open_errors;     // errno of a failed open, per file
  Sample sample;

  Impl(const RecordSource& s, const ReaderOptions& o)
      : source(s), options(o), slots(o.window), jobs(o.window),
        files_per_job(std::clamp<std::uint32_t>(o.files_per_job, 1, std::max(1u, o.window / 2))) {
    for (Slot& slot : slots) {
      slot.reserve(options.slot_bytes);
      slot.owner = this;
      slot.fs.data = &slot;
    }
    for (Job& job : jobs) {
      job.owner = this;
      job.work.data = &job;
    }
    if (int rc = uv_loop_init(&loop); rc != 0)
      throw Error(std::string("async reader: uv_loop_init failed: ") + uv_strerror(rc));
    fds.resize(source.files().size());
    open_errors.assign(source.files().size(), 0);
  }

  ~Impl() {
    while (in_flight > 0) uv_run(&loop, UV_RUN_ONCE);
    uv_loop_close(&loop);
  }

  Slot& slot_of(std::uint64_t seq) { return slots[seq % slots.size()]; }

  void finish(Slot& s) {
    s.done = true;
    s.in_flight = false;
    --in_flight;
  }

  // Shard reads: uv_fs_read into the slot, repeated until `length` bytes or EOF.
  void read_more(Slot& s) {
    uv_buf_t b = uv_buf_init(reinterpret_cast<char*>(s.data() + s.got),
                             static_cast<unsigned>(std::min<std::uint64_t>(s.length - s.got, 1u << 30)));
    int rc = uv_fs_read(&loop, &s.fs, s.fd, &b, 1, static_cast<std::int64_t>(s.where.offset + s.got),
                        &Impl::on_read);
    if (rc < 0) {  // the callback will not run
      uv_fs_req_cleanup(&s.fs);
      s.err = rc;
      s.failed_call = "read";
      finish(s);
    }
  }

  static void on_read(uv_fs_t* req) {
    Slot& s = *static_cast<Slot*>(req->data);
    Impl* self = s.owner;
    const ssize_t r = req->result;
    uv_fs_req_cleanup(req);
    if (r < 0) {
      s.err = static_cast<int>(r);
      s.failed_call = "read";
    } else if (r > 0) {
      s.got += static_cast<std::uint64_t>(r);
      if (s.got < s.length) return self->read_more(s);
    }
    self->finish(s);  // complete, or short (r == 0): checked in next()
  }

  // Whole files: open, fstat, read and close each file of the job, on a
  // thread-pool thread. The job owns its slots until it completes.
  static void whole_file_job(uv_work_t* req) {
    Job& job = *static_cast<Job*>(req->data);
#if SLUICE_IO_URING
    thread_local FileRing ring;
    if (ring.ready()) {
      for (std::uint32_t i = 0; i < job.count; i += FileRing::kFiles) {
        Slot* batch[FileRing::kFiles];
        const std::uint32_t n = std::min(job.count - i, FileRing::kFiles);
        for (std::uint32_t j = 0; j < n; ++j) batch[j] = &job.owner->slot_of(job.first + i + j);
        ring.read_files(batch, n);
      }
      return;
    }
#endif
    for (std::uint32_t i = 0; i < job.count; ++i) read_whole_file(job.owner->slot_of(job.first + i));
  }

#if SLUICE_IO_URING
  // A pool thread's io_uring, which runs the open, read and close of up to
  // kFiles files as one submission (one system call instead of four per file):
  // the open installs a registered ("direct") descriptor that the linked read
  // and close use. Each file is read into its slot's buffer with one read; a
  // file that fills the buffer is read again by read_whole_file, which grows
  // it. A short read of a regular file means its end. Set up on the thread's
  // first job; where that fails (io_uring missing or disabled), ready() is
  // false and the job uses plain system calls.
  class FileRing {
   public:
    static constexpr std::uint32_t kFiles = 64;

    FileRing() {
      if (io_uring_queue_init(3 * kFiles, &ring_, 0) < 0) return;
      if (io_uring_register_files_sparse(&ring_, kFiles) < 0) {
        io_uring_queue_exit(&ring_);
        return;
      }
      ready_ = true;
    }
    ~FileRing() {
      if (ready_) io_uring_queue_exit(&ring_);
    }
    FileRing(const FileRing&) = delete;
    FileRing& operator=(const FileRing&) = delete;
    bool ready() const { return ready_; }

    // Reads the files of n <= kFiles prepared slots.
    void read_files(Slot* const* slots, std::uint32_t n) {
      for (std::uint32_t j = 0; j < n; ++j) {
        Slot& s = *slots[j];
        io_uring_sqe* open = io_uring_get_sqe(&ring_);
        io_uring_prep_openat_direct(open, AT_FDCWD, s.path->c_str(), O_RDONLY | O_NONBLOCK, 0, j);  // a FIFO: no wait
        open->flags |= IOSQE_IO_LINK;  // a failed open cancels the read and close
        io_uring_sqe_set_data64(open, tag(j, kOpen));
        io_uring_sqe* read = io_uring_get_sqe(&ring_);
        io_uring_prep_read(read, static_cast<int>(j), s.data(), static_cast<unsigned>(s.buf.size()), 0);
        read->flags |= IOSQE_FIXED_FILE | IOSQE_IO_HARDLINK;  // close even after a short read
        io_uring_sqe_set_data64(read, tag(j, kRead));
        io_uring_sqe* close = io_uring_get_sqe(&ring_);
        io_uring_prep_close_direct(close, j);
        io_uring_sqe_set_data64(close, tag(j, kClose));
      }
      std::uint32_t left = 3 * n;
      int rc = io_uring_submit_and_wait(&ring_, left);
      while (rc >= 0 && left > 0) {
        io_uring_cqe* cqe = nullptr;
        rc = io_uring_wait_cqe(&ring_, &cqe);
        if (rc == -EINTR) {
          rc = 0;
          continue;
        }
        if (rc < 0) break;
        const std::uint64_t t = io_uring_cqe_get_data64(cqe);
        Slot& s = *slots[t >> 2];
        const int res = cqe->res;
        io_uring_cqe_seen(&ring_, cqe);
        --left;
        if ((t & 3) == kOpen && res < 0) {
          s.err = res;
          s.failed_call = "open";
        } else if ((t & 3) == kRead && s.err == 0) {
          if (res < 0) {
            s.err = res;
            s.failed_call = "read";
          } else {
            s.got = s.length = static_cast<std::uint64_t>(res);
          }
        }
      }
      if (rc < 0) {  // the ring itself failed: drop it (this cancels what is in flight)
        io_uring_queue_exit(&ring_);
        ready_ = false;
      }
      for (std::uint32_t j = 0; j < n; ++j) {
        Slot& s = *slots[j];
        if (rc < 0 || (s.err == 0 && s.got == s.buf.size())) {
          s.err = 0;
          s.failed_call = "";
          s.got = s.length = 0;
          read_whole_file(s);
        }
      }
    }

   private:
    enum Op : std::uint64_t { kOpen = 0, kRead = 1, kClose = 2 };
    static std::uint64_t tag(std::uint32_t j, Op op) { return (std::uint64_t{j} << 2) | op; }
    io_uring ring_{};
    bool ready_ = false;
  };
#endif

  static void read_whole_file(Slot& s) {
    int fd = ::open(s.path->c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);  // a FIFO: no wait for a writer
    if (fd < 0) {
      s.err = -errno;
      s.failed_call = "open";
      return;
    }
    struct stat st;
    if (::fstat(fd, &st) != 0) {
      s.err = -errno;
      s.failed_call = "fstat";
      ::close(fd);
      return;
    }
    if (!S_ISREG(st.st_mode)) {  // a directory, FIFO, device or socket given as a file
      s.err = S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
      s.failed_call = "open (not a regular file)";
      ::close(fd);
      return;
    }
    s.length = static_cast<std::uint64_t>(st.st_size);
    s.reserve(s.length);
    while (s.got < s.length) {
      ssize_t n = ::pread(fd, s.data() + s.got, s.length - s.got, static_cast<off_t>(s.got));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        s.err = -errno;
        s.failed_call = "read";
        break;
      }
      if (n == 0) break;
      s.got += static_cast<std::uint64_t>(n);
    }
    ::close(fd);
  }

  static void whole_file_done(uv_work_t* req, int status) {
    Job& job = *static_cast<Job*>(req->data);
    for (std::uint32_t i = 0; i < job.count; ++i) {
      Slot& s = job.owner->slot_of(job.first + i);
      if (status < 0 && s.err == 0) {
        s.err = status;
        s.failed_call = "queue";
      }
      job.owner->finish(s);
    }
  }

  // Hands slots [first, first + count) (whole files, prepared by issue) to the pool.
  void submit_files(std::uint64_t first, std::uint32_t count) {
    if (count == 0) return;
    Job& job = jobs[first % jobs.size()];
    job.first = first;
    job.count = count;
    int rc = uv_queue_work(&loop, &job.work, &Impl::whole_file_job, &Impl::whole_file_done);
    if (rc < 0) {
      job.count = 0;
      for (std::uint32_t i = 0; i < count; ++i) {
        Slot& s = slot_of(first + i);
        s.err = rc;
        s.failed_call = "queue";
        finish(s);
      }
    }
  }

  // Prepares the next slot for `id`. Shard reads start at once; a whole file
  // is left for submit_files (returns true then).
  bool issue(std::uint64_t id) {
    Slot& s = slot_of(issued++);
    s.where = source.locate(id);
    s.path = &source.files()[s.where.file];
    s.got = 0;
    s.err = 0;
    s.failed_call = "";
    s.done = false;
    s.in_flight = true;
    ++in_flight;
    if (s.where.whole_file) {
      s.length = 0;
      return true;
    }
    s.length = s.where.length;
    s.reserve(s.length);
    detail::Fd& fd = fds[s.where.file];
    if (fd.get() < 0 && open_errors[s.where.file] == 0) {
      int f = ::open(s.path->c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);  // a FIFO: no wait for a writer
      if (f < 0) open_errors[s.where.file] = errno;
      else fd = detail::Fd(f);
    }
    if (fd.get() < 0) {
      s.err = -open_errors[s.where.file];
      s.failed_call = "open";
      finish(s);
      return false;
    }
    s.fd = fd.get();
    if (s.length == 0) {
      finish(s);
      return false;
    }
    read_more(s);
    return false;
  }

  // Issues queued reads into free slots (the slot the caller holds is not
  // free), in groups: it waits until files_per_job slots are free, or as many
  // as are queued, unless nothing is in flight ahead of the caller. Whole
  // files issued together go to the pool as one job.
  void refill() {
    const std::size_t usable = slots.size() - (holding ? 1 : 0);
    const std::size_t group = std::min<std::size_t>(files_per_job, queue.size());
    if (issued - delivered > 0 && usable - (issued - delivered) < group) return;
    std::uint64_t first = issued;
    std::uint32_t count = 0;
    while (issued - delivered < usable && !queue.empty()) {
      const std::uint64_t id = queue.front();
      queue.pop_front();
      const std::uint64_t seq = issued;
      if (!issue(id)) {  // not a whole file: it breaks the run of files
        submit_files(first, count);
        first = issued;
        count = 0;
        continue;
      }
      if (count == 0) first = seq;
      if (++count == files_per_job) {
        submit_files(first, count);
        count = 0;
      }
    }
    submit_files(first, count);
  }

  // The error of a completed slot, or "" when its bytes are all there.
  std::string failure(const Slot& s) const {
    if (s.err != 0) {
      if (std::strcmp(s.failed_call, "open") == 0)
        return "cannot open " + *s.path + ": " + uv_strerror(s.err);
      return detail::at_offset(*s.path, s.where.offset + s.got,
                               std::string(s.failed_call) + " failed: " + uv_strerror(s.err));
    }
    if (s.got < s.length)
      return detail::at_offset(*s.path, s.where.offset + s.got,
                               "truncated: sample " + std::to_string(s.where.id) + " needs " +
                                   std::to_string(s.length) + " bytes from offset " +
                                   std::to_string(s.where.offset) + ", the file ends after " +
                                   std::to_string(s.got));
    return {};
  }
};

AsyncReader::AsyncReader(std::shared_ptr<const RecordSource> source, ReaderOptions options)
    : source_(std::move(source)) {
  if (!source_) throw Error("async reader: no source");
  if (options.window == 0) throw Error("async reader: window must be at least 1");
  size_thread_pool(options.io_threads);
  impl_ = std::make_unique<Impl>(*source_, options);
}

AsyncReader::~AsyncReader() = default;

void AsyncReader::enqueue(std::span<const std::uint64_t> ids) {
  for (std::uint64_t id : ids)
    if (id >= source_->size())
      throw Error("async reader: sample " + std::to_string(id) + " out of range (the " +
                  std::string(source_->format()) + " source has " +
                  std::to_string(source_->size()) + ")");
  impl_->queue.insert(impl_->queue.end(), ids.begin(), ids.end());
  impl_->refill();
}

std::size_t AsyncReader::pending() const {
  return impl_->queue.size() + static_cast<std::size_t>(impl_->issued - impl_->delivered);
}

const Sample* AsyncReader::next() {
  Impl& m = *impl_;
  m.holding = false;  // the slot handed out last time is free again
  m.refill();
  if (m.delivered == m.issued) return nullptr;
  Impl::Slot& s = m.slot_of(m.delivered);
  while (!s.done) uv_run(&m.loop, UV_RUN_ONCE);
  ++m.delivered;
  m.holding = true;

  std::string why = m.failure(s);
  if (why.empty()) {
    try {
      source_->decode(s.where, {s.data(), static_cast<std::size_t>(s.got)}, m.sample);
      return &m.sample;
    } catch (const Error& e) {
      why = e.what();
    }
  }
  if (m.options.on_error == OnError::fail) throw Error(why);
  skips_.add(s.where.id, why);
  m.sample = Sample{};
  m.sample.id = s.where.id;
  m.sample.path = *s.path;
  m.sample.offset = s.where.offset;
  m.sample.skipped = true;
  m.sample.error = std::move(why);
  return &m.sample;
}

}  // namespace sluice::io
