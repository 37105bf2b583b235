#include "sluice/io/async_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uv.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <string>
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
  if (std::getenv("UV_THREADPOOL_SIZE") == nullptr && threads > 0)
    ::setenv("UV_THREADPOOL_SIZE", std::to_string(threads).c_str(), 1);
}

}  // namespace

struct AsyncReader::Impl {
  // One window position: a scratch buffer and the request filling it.
  struct Slot {
    std::unique_ptr<std::byte[]> buf;
    std::size_t capacity = 0;
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
    uv_work_t work;
    Impl* owner = nullptr;

    void reserve(std::size_t n) {
      if (n <= capacity) return;
      std::size_t cap = capacity ? capacity : 4096;
      while (cap < n) cap *= 2;
      buf.reset(new std::byte[cap]);
      capacity = cap;
    }
  };

  const RecordSource& source;
  ReaderOptions options;
  uv_loop_t loop;
  std::vector<Slot> slots;
  std::deque<std::uint64_t> queue;  // enqueued, not yet issued
  std::uint64_t issued = 0;         // sequence numbers: slot = seq % window
  std::uint64_t delivered = 0;
  bool holding = false;             // the caller holds slot (delivered - 1)
  int in_flight = 0;
  std::vector<detail::Fd> fds;      // per source file, opened on first use
  std::vector<int> open_errors;     // errno of a failed open, per file
  Sample sample;

  Impl(const RecordSource& s, const ReaderOptions& o) : source(s), options(o), slots(o.window) {
    if (int rc = uv_loop_init(&loop); rc != 0)
      throw Error(std::string("async reader: uv_loop_init failed: ") + uv_strerror(rc));
    for (Slot& slot : slots) {
      slot.reserve(options.slot_bytes);
      slot.owner = this;
      slot.fs.data = &slot;
      slot.work.data = &slot;
    }
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
    uv_buf_t b = uv_buf_init(reinterpret_cast<char*>(s.buf.get() + s.got),
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

  // Whole files: open, fstat, read and close in one thread-pool job.
  static void whole_file_job(uv_work_t* req) {
    Slot& s = *static_cast<Slot*>(req->data);
    int fd = ::open(s.path->c_str(), O_RDONLY | O_CLOEXEC);
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
    s.length = static_cast<std::uint64_t>(st.st_size);
    s.reserve(s.length);  // this job owns the slot until it completes
    while (s.got < s.length) {
      ssize_t n = ::pread(fd, s.buf.get() + s.got, s.length - s.got, static_cast<off_t>(s.got));
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
    Slot& s = *static_cast<Slot*>(req->data);
    if (status < 0 && s.err == 0) {
      s.err = status;
      s.failed_call = "queue";
    }
    s.owner->finish(s);
  }

  void issue(std::uint64_t id) {
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
      int rc = uv_queue_work(&loop, &s.work, &Impl::whole_file_job, &Impl::whole_file_done);
      if (rc < 0) {
        s.err = rc;
        s.failed_call = "queue";
        finish(s);
      }
      return;
    }
    s.length = s.where.length;
    s.reserve(s.length);
    detail::Fd& fd = fds[s.where.file];
    if (fd.get() < 0 && open_errors[s.where.file] == 0) {
      int f = ::open(s.path->c_str(), O_RDONLY | O_CLOEXEC);
      if (f < 0) open_errors[s.where.file] = errno;
      else fd = detail::Fd(f);
    }
    if (fd.get() < 0) {
      s.err = -open_errors[s.where.file];
      s.failed_call = "open";
      finish(s);
      return;
    }
    s.fd = fd.get();
    if (s.length == 0) {
      finish(s);
      return;
    }
    read_more(s);
  }

  // Issues queued reads into free slots. The slot the caller holds is not free.
  void refill() {
    const std::size_t usable = slots.size() - (holding ? 1 : 0);
    while (issued - delivered < usable && !queue.empty()) {
      const std::uint64_t id = queue.front();
      queue.pop_front();
      issue(id);
    }
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
      source_->decode(s.where, {s.buf.get(), static_cast<std::size_t>(s.got)}, m.sample);
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
