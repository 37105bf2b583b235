#include "staging_ring.h"

#include <algorithm>
#include <string>

#include "sluice/error.h"

namespace sluice::cuda::detail {

namespace {

// Runs fn, swallowing any failure: for teardown, where the CUDA runtime may
// already be unloading.
template <typename Fn>
void quietly(Fn&& fn) noexcept {
  try {
    fn();
  } catch (...) {
  }
}

}  // namespace

StagingRing::StagingRing(std::shared_ptr<Backend> backend, StagedLayout layout, std::uint32_t depth)
    : backend_(std::move(backend)), layout_(std::move(layout)), entries_(depth) {
  try {
    copy_stream_ = backend_->create_stream();
    if (layout_.scratch_bytes > 0) scratch_ = backend_->allocate(layout_.scratch_bytes);
    const std::size_t bytes = std::max(layout_.entry_bytes, kDeviceAlignment);
    for (std::size_t e = 0; e < entries_.size(); ++e) {
      RingEntry& entry = entries_[e];
      entry.buffer = backend_->allocate(bytes);
      entry.ready = backend_->create_event();
      entry.released = backend_->create_event();
      entry.sample_ids.reserve(layout_.batch_size);
      entry.fields.resize(layout_.fields.size());
      free_.push_back(e);
    }
  } catch (...) {
    teardown();
    throw;
  }
}

StagingRing::~StagingRing() { teardown(); }

void StagingRing::teardown() noexcept {
  backend_->destroy_stream(copy_stream_);  // waits for every copy and finishing job
  copy_stream_ = nullptr;
  backend_->deallocate(scratch_);
  scratch_ = nullptr;
  for (RingEntry& entry : entries_) {
    // The last consumer's reads of the buffer must have run before it is freed.
    if (entry.released) quietly([&] { backend_->synchronize(entry.released); });
    entry.host.reset();
    backend_->destroy_event(entry.ready);
    backend_->destroy_event(entry.released);
    backend_->deallocate(entry.buffer);
    entry = RingEntry{};
  }
}

std::optional<std::size_t> StagingRing::acquire() {
  std::unique_lock lock(mutex_);
  freed_.wait(lock, [&] { return closed_ || error_ || !free_.empty(); });
  if (error_) std::rethrow_exception(error_);
  if (closed_) return std::nullopt;
  const std::size_t e = free_.front();
  free_.pop_front();
  return e;
}

std::size_t StagingRing::stage(std::size_t e, Batch host) {
  RingEntry& entry = entries_[e];
  if (entry.host) {
    // The entry came back before its previous copy was known complete: that
    // copy must finish before its host slot is given back and `ready` reused.
    backend_->synchronize(entry.ready);
    entry.host.reset();
    held_.erase(std::find(held_.begin(), held_.end(), e));
  }
  if (host.field_count() != layout_.fields.size()) {
    throw Error("staging: the batch has " + std::to_string(host.field_count()) + " fields; the Loader's options have " +
                std::to_string(layout_.fields.size()));
  }
  const std::size_t rows = host.size();
  for (std::size_t i = 0; i < layout_.fields.size(); ++i) {  // check everything before queueing anything
    const StagedField& f = layout_.fields[i];
    const FieldView v = host.field(i);
    if (v.name != f.name || v.nbytes != rows * f.in_sample_bytes || rows > layout_.batch_size) {
      throw Error("staging: field " + std::to_string(i) + " ('" + std::string(v.name) + "', " +
                  std::to_string(v.nbytes) + " bytes) does not match the Loader's options");
    }
  }

  backend_->wait(copy_stream_, entry.released);
  auto* buffer = static_cast<std::byte*>(entry.buffer);
  auto* scratch = static_cast<std::byte*>(scratch_);
  std::size_t copied = 0;
  for (std::size_t i = 0; i < layout_.fields.size(); ++i) {
    const StagedField& f = layout_.fields[i];
    const FieldView v = host.field(i);
    std::byte* out = buffer + f.offset;
    if (f.normalize) {
      backend_->copy_async(scratch + f.scratch_offset, v.data, v.nbytes, copy_stream_);
      NormalizeJob job = *f.normalize;
      job.src = reinterpret_cast<const std::uint8_t*>(scratch + f.scratch_offset);
      job.dst = out;
      job.samples = static_cast<std::int64_t>(rows);
      backend_->normalize_async(job, copy_stream_);
    } else {
      backend_->copy_async(out, v.data, v.nbytes, copy_stream_);
    }
    copied += v.nbytes;

    StagedFieldView& view = entry.fields[i];
    view.ndim = f.out_sample_shape.size() + 1;
    view.shape[0] = static_cast<std::int64_t>(rows);
    std::copy(f.out_sample_shape.begin(), f.out_sample_shape.end(), view.shape + 1);
    std::int64_t stride = 1;
    for (std::size_t d = view.ndim; d-- > 0;) {
      view.strides[d] = stride;
      stride *= view.shape[d];
    }
    view.data = out;
    view.nbytes = rows * f.out_sample_bytes;
  }
  backend_->record(entry.ready, copy_stream_);

  entry.epoch = host.epoch();
  entry.index = host.index();
  const auto ids = host.sample_ids();
  entry.sample_ids.assign(ids.begin(), ids.end());
  entry.host = std::move(host);
  held_.push_back(e);
  return copied;
}

void StagingRing::release_host_batches(std::size_t keep) {
  while (!held_.empty()) {
    RingEntry& entry = entries_[held_.front()];
    if (held_.size() > keep) {
      backend_->synchronize(entry.ready);
    } else if (!backend_->query(entry.ready)) {
      break;
    }
    entry.host.reset();
    held_.pop_front();
  }
}

void StagingRing::mark_delivered(std::size_t) {
  std::lock_guard lock(mutex_);
  ++consumer_held_;
}

void StagingRing::recycle(std::size_t e, StreamHandle reader) noexcept {
  try {
    backend_->record(entries_[e].released, reader);
  } catch (...) {
    // Without the guard the buffer cannot be reused safely: keep it out.
    fail(std::current_exception());
    std::lock_guard lock(mutex_);
    --consumer_held_;
    return;
  }
  put_free(e, true);
}

void StagingRing::recycle_unread(std::size_t e) noexcept { put_free(e, false); }

void StagingRing::put_free(std::size_t e, bool was_delivered) noexcept {
  {
    std::lock_guard lock(mutex_);
    if (was_delivered) --consumer_held_;
    free_.push_back(e);
  }
  freed_.notify_one();
}

std::size_t StagingRing::consumer_held() const {
  std::lock_guard lock(mutex_);
  return consumer_held_;
}

void StagingRing::close() {
  {
    std::lock_guard lock(mutex_);
    closed_ = true;
  }
  freed_.notify_all();
}

void StagingRing::fail(std::exception_ptr error) noexcept {
  {
    std::lock_guard lock(mutex_);
    if (!error_) error_ = std::move(error);
  }
  freed_.notify_all();
}

}  // namespace sluice::cuda::detail
