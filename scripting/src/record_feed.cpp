#include "record_feed.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string_view>
#include <utility>

#include "sluice/dtype.h"
#include "sluice/error.h"

namespace sluice::scripting {
namespace {

// A typed one-dimensional part of a record: `count` elements of `dtype` at `data`.
void set_vector(sluice_record_field& f, const char* name, const void* data, DType dtype, std::uint64_t count) {
  f.name = name;
  f.name_len = std::char_traits<char>::length(name);
  f.data = data;
  f.size = count * dtype_size(dtype);
  f.dtype = static_cast<std::int32_t>(dtype);
  f.ndim = 1;
  f.shape[0] = static_cast<std::int64_t>(count);
}

// A record of `count` parts in fields, numbered `index`, with no file.
void set_record(sluice_record& out, std::uint64_t index, const std::vector<sluice_record_field>& fields,
                std::uint32_t count) {
  out = sluice_record{};
  out.record = index;
  out.label = -1;
  out.fields = fields.data();
  out.field_count = count;
}

}  // namespace

std::unique_ptr<RecordFeed> RecordFeed::for_worker(std::shared_ptr<const DataSource> source,
                                                   const FeedOptions& options) {
  return std::unique_ptr<RecordFeed>(new RecordFeed(std::move(source), options, true));
}

std::unique_ptr<RecordFeed> RecordFeed::for_launcher(std::shared_ptr<const DataSource> source,
                                                     const FeedOptions& options) {
  return std::unique_ptr<RecordFeed>(new RecordFeed(std::move(source), options, false));
}

RecordFeed::RecordFeed(std::shared_ptr<const DataSource> source, const FeedOptions& options, bool worker)
    : source_(std::move(source)), options_(options), worker_(worker) {
  switch (source_->mode()) {
    case DataSource::Mode::indexed:
      if (worker_) {
        io::ReaderOptions reader;
        reader.window = options_.read_ahead;
        reader.io_threads = options_.io_threads;
        // Bad samples come back marked, so the feed can tell whose they are.
        reader.on_error = OnError::skip;
        reader_ = std::make_unique<io::AsyncReader>(source_->records(), reader);
      }
      if (const auto& lazy = source_->lazy_remote()) {
        if (worker_) {
          fetch_ = std::make_unique<remote::Prefetcher>(lazy->cache, lazy->urls, lazy->sizes);
          ahead_count_.assign(lazy->urls.size(), 0);
          ahead_limit_ = fetch_->ahead_limit(options_.prefetch_bytes);
        } else {
          launcher_cache_ = std::make_unique<remote::Cache>(lazy->cache);
        }
      }
      break;
    case DataSource::Mode::stream: {
      std::uint32_t part = options_.worker, parts = options_.workers;
      if (!worker_) part = 0, parts = 1;
      if (part >= parts)
        throw Error("sluice." + source_->kind() + ": worker " + std::to_string(part) +
                    " has no share of the streamed shards, which load_script partitioned among " +
                    std::to_string(parts) + " workers; do not raise Options.workers of a streaming "
                    "pipeline after loading it");
      stream_ = source_->stream(part, parts, OnError::skip);
      break;
    }
    case DataSource::Mode::npy:
      for (const NpyColumn& column : source_->columns())
        rows_.emplace_back(column.array.rows_contiguous() ? 0 : column.array.row_bytes());
      break;
    case DataSource::Mode::parquet:
      parquet_ = source_->parquet_reader(options_.row_groups);
      parquet_values_.resize(parquet_->column_names().size());
      fields_.resize(parquet_values_.size());
      break;
    case DataSource::Mode::tokens:
      break;
    case DataSource::Mode::packed: {
      const std::size_t L = source_->packed()->seq_len();
      tokens_.resize(L);
      targets_.resize(L);
      segment_ids_.resize(L);
      positions_.resize(L);
      loss_mask_.resize(L);
      fields_.resize(5);
      break;
    }
  }
}

RecordFeed::~RecordFeed() = default;

void RecordFeed::upcoming(std::uint64_t epoch, std::uint64_t batch, std::span<const std::uint64_t> samples) {
  if (!reader_ || samples.empty()) return;
  if (!fetch_) {
    reader_->enqueue(samples);
    announced_.push_back({epoch, batch, samples.size(), {}});
    return;
  }
  if (plan_) last_seq_ = std::max(last_seq_, epoch * plan_->batches_per_epoch() + batch);
  waiting_.push_back({epoch, batch, {samples.begin(), samples.end()}, objects_of(samples)});
  // With no reads enqueued, the first waiting batch is the next this worker
  // fills: its shards are needed now, before any fetched ahead. (Listed only
  // ahead, the first batches' shards shared the link with the next windows'
  // that the other workers fetched ahead meanwhile: 7 downloads instead of
  // 4 before the first batch.)
  update_window(announced_.empty() ? 1 : 0);
  start_ready_reads();
}

void RecordFeed::look_ahead(const EpochPlan& plan, std::uint64_t end_seq) {
  plan_ = &plan;
  end_seq_ = end_seq;
}

remote::CacheStats RecordFeed::remote_stats() const {
  if (fetch_) return fetch_->stats();
  remote::CacheStats r = trial_stats_;  // the ranged reads
  if (launcher_cache_) remote::add_stats(r, launcher_cache_->stats());  // shards found whole, or downloaded whole
  return r;
}

std::vector<remote::DownloadSpan> RecordFeed::take_downloads() {
  return fetch_ ? fetch_->take_downloads() : std::vector<remote::DownloadSpan>{};
}

// The shards `samples` lie in, each once, in order of first use.
std::vector<std::uint32_t> RecordFeed::objects_of(std::span<const std::uint64_t> samples) const {
  std::vector<std::uint32_t> objects;
  for (std::uint64_t id : samples) {
    if (id >= source_->size()) continue;  // reported by the read
    const std::uint32_t file = source_->records()->locate(id).file;
    if (std::find(objects.begin(), objects.end(), file) == objects.end()) objects.push_back(file);
  }
  return objects;
}

// The plan's batches after the latest one this worker has seen, until their
// shards add up to ahead_limit_ (each counted once), kMaxAhead batches or
// the run's end (nothing is fetched for an epoch the run will not read).
// Every worker looks at the same batches (the parent hands each batch to the
// least loaded worker, so which are this worker's is not known ahead); the
// node cache downloads each shard once whoever asks.
void RecordFeed::extend_ahead() {
  constexpr std::size_t kMaxAhead = 4096;
  if (!plan_ || ahead_limit_ == 0) return;
  auto drop_front = [&] {
    for (std::uint32_t k : ahead_.front().second)
      if (--ahead_count_[k] == 0) ahead_bytes_ -= fetch_->size_of(k);
    ahead_.pop_front();
  };
  while (!ahead_.empty() && ahead_.front().first <= last_seq_) drop_front();
  const std::uint64_t per_epoch = plan_->batches_per_epoch();
  std::uint64_t next = ahead_.empty() ? last_seq_ + 1 : ahead_.back().first + 1;
  while (ahead_bytes_ < ahead_limit_ && ahead_.size() < kMaxAhead && next < end_seq_) {
    const std::uint64_t batch = next % per_epoch;
    plan_ids_.resize(plan_->batch_length(batch));
    plan_->batch_samples(next / per_epoch, batch, plan_ids_);
    std::vector<std::uint32_t> objects = objects_of(plan_ids_);
    for (std::uint32_t k : objects)
      if (ahead_count_[k]++ == 0) ahead_bytes_ += fetch_->size_of(k);
    ahead_.emplace_back(next++, std::move(objects));
  }
}

// Tells the prefetcher the shards in order of next use: the batch being
// filled, the batches whose reads are enqueued (local already), the first
// `waiting_needed` waiting ones (begin_batch: up to the batch being filled),
// all needed now, then the other waiting ones and the plan's next batches
// (ahead: fetched only within cache_limit). So a download may pass the
// limit only for the batch being filled, or for the next one when no reads
// are enqueued (upcoming).
void RecordFeed::update_window(std::size_t waiting_needed) {
  std::vector<std::uint32_t> order;
  std::vector<char> listed(fetch_->urls().size(), 0);
  auto add = [&](const std::vector<std::uint32_t>& objects) {
    for (std::uint32_t k : objects)
      if (!listed[k]) {
        listed[k] = 1;
        order.push_back(k);
      }
  };
  add(current_objects_);
  for (const Announced& a : announced_) add(a.objects);
  for (std::size_t j = 0; j < waiting_.size() && j < waiting_needed; ++j) add(waiting_[j].objects);
  const std::size_t needed = order.size();
  for (std::size_t j = waiting_needed; j < waiting_.size(); ++j) add(waiting_[j].objects);
  extend_ahead();
  for (const auto& [seq, objects] : ahead_) add(objects);
  fetch_->want(std::move(order), needed);
}

// Enqueues the reads of waiting batches, front to back, while their shards are local.
void RecordFeed::start_ready_reads() {
  while (!waiting_.empty()) {
    Waiting& w = waiting_.front();
    for (std::uint32_t k : w.objects)
      if (!fetch_->ready(k)) return;
    reader_->enqueue(w.samples);
    announced_.push_back({w.epoch, w.batch, w.samples.size(), std::move(w.objects)});
    waiting_.pop_front();
  }
}

void RecordFeed::begin_batch(std::uint64_t epoch, std::uint64_t batch, std::span<const std::uint64_t> samples) {
  epoch_ = epoch;
  if (!reader_) return;
  if (fetch_) {
    if (plan_) last_seq_ = std::max(last_seq_, epoch * plan_->batches_per_epoch() + batch);
    current_objects_ = objects_of(samples);
    std::size_t through = 0;  // waiting batches up to this one, if it waits
    for (std::size_t j = 0; j < waiting_.size(); ++j)
      if (waiting_[j].epoch == epoch && waiting_[j].batch == batch) through = j + 1;
    update_window(std::max<std::size_t>(through, 1));
    const auto started = std::chrono::steady_clock::now();
    struct Clock {  // counts the wait, thrown or not
      std::uint64_t& total;
      std::chrono::steady_clock::time_point from;
      ~Clock() {
        total += static_cast<std::uint64_t>(
            std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - from).count());
      }
    } clock{remote_wait_ns_, started};
    for (std::size_t j = 0; j < through; ++j)
      for (std::uint32_t k : waiting_[j].objects) fetch_->wait(k);
    for (std::uint32_t k : current_objects_) fetch_->wait(k);
    start_ready_reads();
  }
  discard(std::exchange(current_, 0));
  for (std::size_t k = 0; k < announced_.size(); ++k) {
    if (announced_[k].epoch != epoch || announced_[k].batch != batch) continue;
    for (std::size_t stale = 0; stale < k; ++stale) discard(announced_[stale].remaining);
    current_ = announced_[k].remaining;
    announced_.erase(announced_.begin(), announced_.begin() + static_cast<std::ptrdiff_t>(k) + 1);
    return;
  }
  discard_all();  // never announced: take() reads its samples one by one
}

void RecordFeed::discard(std::size_t count) {
  for (; count > 0; --count) reader_->next();
}

void RecordFeed::discard_all() {
  while (reader_->next() != nullptr) {
  }
  announced_.clear();
  current_ = 0;
}

bool RecordFeed::take(std::uint64_t index, sluice_record& out) noexcept {
  try {
    switch (source_->mode()) {
      case DataSource::Mode::indexed: return take_indexed(index, out);
      case DataSource::Mode::stream: return take_stream(out);
      case DataSource::Mode::npy: return take_npy(index, out);
      case DataSource::Mode::parquet: return take_parquet(index, out);
      case DataSource::Mode::tokens: return take_tokens(index, out);
      case DataSource::Mode::packed: return take_packed(index, out);
    }
  } catch (const std::exception& e) {
    return failed(e.what());
  }
  return failed("unknown source mode");
}

bool RecordFeed::take_indexed(std::uint64_t index, sluice_record& out) {
  if (!reader_) {  // launcher: synchronous, passing over bad samples under skip
    for (std::uint64_t id = index; id < source_->size(); ++id) {
      try {
        if (launcher_cache_)
          read_remote_trial(id);
        else
          io::read_sample(*source_->records(), id, buffer_, sample_);
        return publish(sample_, out);
      } catch (const Error& e) {
        if (options_.on_error == OnError::fail || id + 1 == source_->size()) return failed(e.what());
      }
    }
    return failed("no readable sample");
  }
  for (;;) {
    if (current_ == 0) {
      // Not among the batch's announced samples: read it now, after whatever
      // the reader still holds for later batches.
      discard_all();
      reader_->enqueue(index);
      current_ = 1;
    }
    const io::Sample* sample = reader_->next();
    --current_;
    if (sample == nullptr) return failed("internal: the reader has no sample left");
    if (sample->id != index) continue;  // announced, then dropped from the batch
    if (sample->skipped) return failed(sample->error);
    return publish(*sample, out);
  }
}

// The load's trial reads a sample or two (load_script: to check the pipeline
// and learn its fields). From the node cache when its shard lies whole there
// (pinned while this feed lives); else only the sample's bytes, with one
// ranged GET: the whole shard (gigabytes in some data sets) is the workers'
// to fetch once, as the plan needs it, not the first batch's to wait for. A
// server without ranges (python -m http.server) answers 200: refused at its
// headers, and the shard is downloaded whole into the cache, as before; so
// is a sample of more than 16 MiB (a ranged body is kept in memory).
// A failed download (403, 404, the store down past its retries, a size that
// is not the index's) is the load's error whatever on_error says, as it is a
// worker's: kept, and thrown again for every later sample with no request,
// so that skip does not try the store once per sample of the data set.
void RecordFeed::read_remote_trial(std::uint64_t id) {
  constexpr std::uint64_t kRangedMost = std::uint64_t{16} << 20;
  if (!trial_download_error_.empty()) throw Error(trial_download_error_);
  const LazyRemote& lazy = *source_->lazy_remote();
  const io::SampleLocation where = source_->records()->locate(id);
  const std::string& url = lazy.urls.at(where.file);
  auto download_failed = [&](const std::string& why) {
    trial_download_error_ = why;
    throw Error(why);
  };
  auto from_cache = [&] {
    try {
      launcher_cache_->get(url);
    } catch (const Error& e) {
      download_failed(e.what());
    }
    io::read_sample(*source_->records(), id, buffer_, sample_);
  };
  if (launcher_cache_->get_if_whole(url))  // pinned while this feed lives, with no request
    return io::read_sample(*source_->records(), id, buffer_, sample_);
  if (where.whole_file || where.length == 0 || where.length > kRangedMost) return from_cache();
  bool no_ranges = false;
  const remote::Response r = remote::fetch(
      {.url = url, .offset = where.offset, .length = where.length}, lazy.cache.transfer,
      [&](const remote::Response& seen) {
        no_ranges = seen.status != 206;
        return no_ranges ? std::string("the server does not send ranges") : std::string();
      });
  trial_stats_.transfer.requests += 1 + r.retries;
  trial_stats_.transfer.retries += r.retries;
  trial_stats_.transfer.bytes += r.bytes;
  if (no_ranges) return from_cache();
  if (!r.ok()) {
    ++trial_stats_.transfer.failures;
    download_failed(r.error);
  }
  const std::uint64_t size = lazy.sizes.at(where.file);
  if (size != 0 && r.object_size != 0 && r.object_size != size)
    download_failed(remote::index_size_mismatch(url, r.object_size, size));
  buffer_.resize(r.body.size());
  std::memcpy(buffer_.data(), r.body.data(), r.body.size());
  source_->records()->decode(where, buffer_, sample_);
}

bool RecordFeed::take_stream(sluice_record& out) {
  if (held_) {
    held_ = false;
    return publish(sample_, out);
  }
  for (bool fresh_pass = false;;) {
    const bool got = stream_->next(sample_);
    const auto& skips = stream_->skips().entries();
    if (skips.size() > skips_seen_) {
      // The stream passed over a bad record: report it as this sample, and
      // keep the good record it went on to for the next take().
      skips_seen_ = skips.size();
      held_ = got;
      return failed(skips.back().reason);
    }
    if (got) return publish(sample_, out);
    if (fresh_pass)
      return failed("sluice." + source_->kind() + ": worker " + std::to_string(options_.worker) +
                    "'s share of the shards holds no records");
    stream_->reset(++pass_);
    skips_seen_ = 0;
    fresh_pass = true;
  }
}

bool RecordFeed::take_npy(std::uint64_t index, sluice_record& out) {
  const auto& columns = source_->columns();
  if (fields_.size() < columns.size()) fields_.resize(columns.size());
  for (std::size_t c = 0; c < columns.size(); ++c) {
    const io::NpyArray& array = columns[c].array;
    sluice_record_field& f = fields_[c];
    f.name = columns[c].name.data();
    f.name_len = columns[c].name.size();
    if (array.rows_contiguous()) {
      f.data = array.row(index).data();
    } else {
      array.copy_row(index, rows_[c]);
      f.data = rows_[c].data();
    }
    f.size = array.row_bytes();
    f.dtype = static_cast<std::int32_t>(array.dtype());
    const auto& shape = array.shape();
    f.ndim = shape.empty() ? 0 : static_cast<std::int32_t>(shape.size() - 1);
    for (std::int32_t d = 0; d < f.ndim; ++d) f.shape[d] = shape[static_cast<std::size_t>(d) + 1];
  }
  const io::NpyArray& first = columns.front().array;
  out = sluice_record{};
  out.record = index;
  out.offset = first.header_bytes() + (first.rows_contiguous() ? index * first.row_bytes() : 0);
  out.label = -1;
  set_path(out, first.path());
  out.fields = fields_.data();
  out.field_count = static_cast<std::uint32_t>(columns.size());
  return true;
}

bool RecordFeed::take_parquet(std::uint64_t index, sluice_record& out) {
  parquet_->read(index, parquet_values_);
  const auto& names = parquet_->column_names();
  const auto& infos = parquet_->column_infos();
  for (std::size_t c = 0; c < names.size(); ++c) {
    sluice_record_field& f = fields_[c];
    const io::ParquetValue& v = parquet_values_[c];
    f.name = names[c].data();
    f.name_len = names[c].size();
    f.data = v.data;
    f.size = v.bytes;
    if (!infos[c].dtype) {  // bytes
      f.dtype = -1;
      f.ndim = 1;
      f.shape[0] = static_cast<std::int64_t>(v.bytes);
      continue;
    }
    f.dtype = static_cast<std::int32_t>(*infos[c].dtype);
    const std::size_t elements = v.bytes / dtype_size(*infos[c].dtype);
    // A scalar column's row is a scalar; a list's (or a null's) is 1-d.
    f.ndim = !infos[c].list && elements == 1 ? 0 : 1;
    f.shape[0] = static_cast<std::int64_t>(elements);
  }
  const auto [file, row] = parquet_->locate(index);
  const std::string& path = parquet_->file(file).path();
  out = sluice_record{};
  out.record = row;
  out.label = -1;
  set_path(out, path);
  out.fields = fields_.data();
  out.field_count = static_cast<std::uint32_t>(names.size());
  return true;
}

namespace {

// A slot that `run` (a column's rows) fills column by column: a fixed-size
// field whose rows are the column's dense values, nothing else.
bool by_column(const io::ParquetColumnRun& run, const sluice_parquet_slot& slot) {
  return run.data != nullptr && slot.dtype >= 0 && run.width == slot.stride;
}

}  // namespace

std::int32_t RecordFeed::fill_parquet(std::span<const std::uint64_t> samples,
                                      std::span<const sluice_parquet_slot> slots, std::uint8_t* done,
                                      const BatchContext* batch) noexcept {
  if (!parquet_) return -1;
  const auto& names = parquet_->column_names();
  const auto& infos = parquet_->column_infos();
  if (slot_plan_ < 0) {  // once: the fields are fixed for the process (ScriptProducer::check_layout)
    slot_plan_ = slots.size() == names.size() ? 1 : 0;
    slot_column_.assign(slots.size(), -1);
    for (std::size_t k = 0; slot_plan_ == 1 && k < slots.size(); ++k) {
      const sluice_parquet_slot& slot = slots[k];
      const auto at = std::find(names.begin(), names.end(), std::string_view(slot.name));
      const auto c = static_cast<std::size_t>(at - names.begin());
      // What store() accepts without complaint: a view of the field's dtype
      // and shape (a scalar column's row is 0-d, a list's 1-d), or a byte
      // column's row into a bytes field (its length, then its bytes).
      const bool bytes = slot.dtype < 0;
      const bool same = at != names.end() &&
                        (bytes ? !infos[c].dtype && !infos[c].list && slot.stride >= sizeof(std::uint64_t)
                               : infos[c].dtype && static_cast<std::int32_t>(*infos[c].dtype) == slot.dtype &&
                                     slot.ndim == (infos[c].list ? 1 : 0) &&
                                     (infos[c].list ? slot.stride % dtype_size(*infos[c].dtype) == 0
                                                    : slot.stride == dtype_size(*infos[c].dtype))) &&
                        std::count(slot_column_.begin(), slot_column_.end(), static_cast<int>(c)) == 0;
      if (!same) slot_plan_ = 0;
      slot_column_[k] = static_cast<int>(c);
    }
    parquet_runs_.resize(names.size());
    slot_copied_.assign(slots.size(), 0);
  }
  if (slot_plan_ == 0 || slots.size() != slot_column_.size()) return -1;

  const std::size_t n = samples.size();
  std::fill(done, done + n, std::uint8_t{0});
  std::int32_t written = 0;
  gather_at_.clear();
  try {
    // A shuffled batch seldom holds two consecutive rows side by side: then
    // every row is gathered, found with one pass that does not branch a row.
    bool runs = false;
    for (std::size_t i = 0; i + 1 < n; ++i) runs |= samples[i + 1] == samples[i] + 1;
    if (!runs) {
      gather_at_.resize(n);
      for (std::size_t i = 0; i < n; ++i) gather_at_[i] = static_cast<std::uint32_t>(i);
    }
    for (std::size_t i = 0; runs && i < n;) {
      std::size_t consecutive = 1;
      while (i + consecutive < n && samples[i + consecutive] == samples[i] + consecutive) ++consecutive;
      if (consecutive == 1) {  // gathered below with the other rows of its row group
        gather_at_.push_back(static_cast<std::uint32_t>(i++));
        continue;
      }
      // rows [i, i + m) are consecutive rows of one row group
      if (batch != nullptr) batch->begin_sample(i);
      const std::uint64_t m = parquet_->read_run(samples[i], consecutive, parquet_runs_);
      std::size_t copied = 0;
      for (std::size_t k = 0; k < slots.size(); ++k) {
        const io::ParquetColumnRun& run = parquet_runs_[static_cast<std::size_t>(slot_column_[k])];
        slot_copied_[k] = by_column(run, slots[k]);
        if (!slot_copied_[k]) continue;
        io::copy_run(run, m, static_cast<std::byte*>(slots[k].dst) + i * slots[k].stride, slots[k].stride);
        ++copied;
      }
      if (copied == slots.size()) {
        std::fill(done + i, done + i + m, std::uint8_t{1});
        written += static_cast<std::int32_t>(m);
      } else {
        group_at_.resize(m);
        for (std::uint64_t r = 0; r < m; ++r) group_at_[r] = static_cast<std::uint32_t>(i + r);
        written += fill_parquet_rows(samples, slots, group_at_, done);
      }
      i += m;
    }
    written += gather_parquet(samples, slots, done, batch);
  } catch (...) {
    // A row group that fails to read: its rows (and those not reached yet)
    // stay at 0, for take() to report the error as it does for any row.
  }
  return written;
}

// The rows of gather_at_ (batch positions), row group by row group: each
// fixed-size column's values for all of the group's rows with one loop
// (io::gather_rows), the other columns row by row. One group is decoded (or
// found cached) at a time, so the reader keeps no more groups than it would
// reading the rows one by one.
std::int32_t RecordFeed::gather_parquet(std::span<const std::uint64_t> samples,
                                        std::span<const sluice_parquet_slot> slots, std::uint8_t* done,
                                        const BatchContext* batch) {
  split_fields_.clear();
  split_stride_ = 0;
  // The rows gathered whole go to their fields when the batch's groups are
  // all gathered, or when a group fails to read (done[] already says 1 for them).
  auto split = [&]() noexcept {
    if (split_stride_ == 0) return;
    io::split_rows(split_scratch_.data(), split_stride_, samples.size(), split_mark_.data(), split_fields_);
    split_stride_ = 0;
  };
  try {
    const std::int32_t written = gather_parquet_groups(samples, slots, done, batch);
    split();
    return written;
  } catch (...) {
    split();
    throw;
  }
}

// Whether the fields that `slot_copied_` marks lie side by side in one row
// of the current group's runs (its interleaved columns): then group_fields_
// holds their places in a row of `*span` bytes from `*first`.
bool RecordFeed::fields_in_row(std::span<const sluice_parquet_slot> slots, const std::byte** first,
                               std::size_t* span, std::size_t* stride) {
  group_fields_.clear();
  const std::byte* lo = nullptr;
  const std::byte* hi = nullptr;
  std::size_t s = 0;
  for (std::size_t k = 0; k < slots.size(); ++k) {
    if (!slot_copied_[k]) continue;
    const io::ParquetColumnRun& run = parquet_runs_[static_cast<std::size_t>(slot_column_[k])];
    if (s == 0) s = run.stride;
    if (run.stride != s) return false;
    lo = lo == nullptr ? run.data : std::min(lo, run.data);
    hi = hi == nullptr ? run.data + run.width : std::max(hi, run.data + run.width);
  }
  if (lo == nullptr || static_cast<std::size_t>(hi - lo) > s) return false;  // not one row: not interleaved
  // In the row's order (the slot's may differ: fields inferred from a sample
  // are sorted by name, c10 before c2), so split_rows finds the side-by-side
  // columns it transposes together. Every row group of the files lays its
  // row out alike: the order found for one group serves the next ones.
  auto offset_of = [&](std::size_t k) {
    return static_cast<std::size_t>(parquet_runs_[static_cast<std::size_t>(slot_column_[k])].data - lo);
  };
  bool ordered = !row_order_.empty();
  for (std::size_t i = 0; ordered && i < row_order_.size(); ++i)
    ordered = slot_copied_[row_order_[i]] && (i == 0 || offset_of(row_order_[i - 1]) < offset_of(row_order_[i]));
  if (ordered) ordered = row_order_.size() == static_cast<std::size_t>(std::count(slot_copied_.begin(), slot_copied_.end(), 1));
  if (!ordered) {
    row_order_.clear();
    for (std::size_t k = 0; k < slots.size(); ++k)
      if (slot_copied_[k]) row_order_.push_back(k);
    std::sort(row_order_.begin(), row_order_.end(), [&](std::size_t a, std::size_t b) { return offset_of(a) < offset_of(b); });
  }
  for (const std::size_t k : row_order_) {
    const io::ParquetColumnRun& run = parquet_runs_[static_cast<std::size_t>(slot_column_[k])];
    group_fields_.push_back({offset_of(k), run.width, static_cast<std::byte*>(slots[k].dst)});
  }
  *first = lo;
  *span = static_cast<std::size_t>(hi - lo);
  *stride = s;
  return group_fields_.size() >= 2;
}

std::int32_t RecordFeed::gather_parquet_groups(std::span<const std::uint64_t> samples,
                                               std::span<const sluice_parquet_slot> slots, std::uint8_t* done,
                                               const BatchContext* batch) {
  std::int32_t written = 0;
  while (!gather_at_.empty()) {
    if (batch != nullptr) batch->begin_sample(gather_at_.front());
    const auto [first, end] = parquet_->read_group(samples[gather_at_.front()], parquet_runs_);
    io::take_group_rows(samples, first, end, gather_at_, group_rows_, group_at_);
    std::size_t copied = 0;
    for (std::size_t k = 0; k < slots.size(); ++k) {
      const io::ParquetColumnRun& run = parquet_runs_[static_cast<std::size_t>(slot_column_[k])];
      slot_copied_[k] = by_column(run, slots[k]);
      copied += slot_copied_[k] ? 1 : 0;
    }
    // Fields side by side in the group's interleaved rows, laid out as in
    // the rows gathered whole so far this batch: each row copied once into
    // the scratch, split into the fields at the end. Otherwise field by field.
    const std::byte* first_byte = nullptr;
    std::size_t span = 0, stride = 0;
    const bool whole = copied > 0 && fields_in_row(slots, &first_byte, &span, &stride) &&
                       (split_stride_ == 0 || (span == split_stride_ && group_fields_.size() == split_fields_.size() &&
                                               std::equal(group_fields_.begin(), group_fields_.end(), split_fields_.begin(),
                                                          [](const io::ParquetRowField& a, const io::ParquetRowField& b) {
                                                            return a.offset == b.offset && a.width == b.width && a.dst == b.dst;
                                                          })));
    if (whole) {
      if (split_stride_ == 0) {
        split_fields_ = group_fields_;
        split_stride_ = span;
        split_scratch_.resize(samples.size() * span);
        split_mark_.assign(samples.size(), 0);
      }
      io::gather_rows({first_byte, span, stride}, group_rows_, group_at_, split_scratch_.data(), span);
      for (const std::uint32_t j : group_at_) split_mark_[j] = 1;
    } else {
      for (std::size_t k = 0; k < slots.size(); ++k) {
        if (!slot_copied_[k]) continue;
        const io::ParquetColumnRun& run = parquet_runs_[static_cast<std::size_t>(slot_column_[k])];
        io::gather_rows(run, group_rows_, group_at_, static_cast<std::byte*>(slots[k].dst), slots[k].stride);
      }
    }
    if (copied > 0) rows_gathered_ += group_at_.size();
    if (copied == slots.size()) {
      for (const std::uint32_t j : group_at_) done[j] = 1;
      written += static_cast<std::int32_t>(group_at_.size());
    } else {
      written += fill_parquet_rows(samples, slots, group_at_, done);
    }
  }
  return written;
}

// Rows `at` (batch positions) one by one, the fields slot_copied_ does not
// mark: a row whose value does not fill its slot (a null, a list of another
// length) is left to take(), done[j] 0.
std::int32_t RecordFeed::fill_parquet_rows(std::span<const std::uint64_t> samples,
                                           std::span<const sluice_parquet_slot> slots,
                                           std::span<const std::uint32_t> at, std::uint8_t* done) {
  constexpr std::size_t kAhead = 8;  // rows prefetched ahead of the one read
  std::int32_t written = 0;
  for (std::size_t t = 0; t < at.size(); ++t) {
    if (t + 2 * kAhead < at.size()) parquet_->prefetch_offsets(samples[at[t + 2 * kAhead]]);
    if (t + kAhead < at.size()) parquet_->prefetch(samples[at[t + kAhead]]);
    const std::uint32_t j = at[t];
    parquet_->read(samples[j], parquet_values_);
    bool whole = true;
    for (std::size_t k = 0; k < slots.size(); ++k) {
      if (slot_copied_[k]) continue;
      const io::ParquetValue& v = parquet_values_[static_cast<std::size_t>(slot_column_[k])];
      std::byte* dst = static_cast<std::byte*>(slots[k].dst) + j * slots[k].stride;
      if (slots[k].dtype < 0 && v.data != nullptr && v.bytes <= slots[k].stride - sizeof(std::uint64_t)) {  // bytes
        const std::uint64_t length = v.bytes;
        std::memcpy(dst, &length, sizeof length);
        if (length > 0) std::memcpy(dst + sizeof length, v.data, v.bytes);
        continue;
      }
      if (slots[k].dtype < 0 || v.bytes != slots[k].stride) {
        whole = false;  // more bytes than the field holds, a null, a list of another length: take()'s error
        continue;
      }
      std::memcpy(dst, v.data, v.bytes);
    }
    done[j] = whole ? 1 : 0;
    written += whole ? 1 : 0;
  }
  return written;
}

bool RecordFeed::take_tokens(std::uint64_t index, sluice_record& out) {
  if (source_->windows()) return take_window(index, out);
  const text::TokenCorpus& corpus = *source_->corpus();
  const text::Document& doc = corpus.document(index);
  const text::TokenCorpus::File& file = corpus.files()[doc.file];
  const bool narrow = file.type == text::TokenType::uint16;
  if (fields_.empty()) fields_.resize(1);
  set_vector(fields_[0], "tokens", static_cast<const char*>(file.data) + doc.begin * (narrow ? 2 : 4),
             narrow ? DType::u16 : DType::u32, doc.length);
  set_record(out, index, fields_, 1);
  out.offset = doc.begin * (narrow ? 2 : 4);
  set_path(out, file.path);
  return true;
}

bool RecordFeed::fill_packed(std::uint64_t index, const text::PackedRow& out) noexcept {
  if (source_->mode() != DataSource::Mode::packed) return failed("internal: the source is not packed");
  try {
    source_->packed()->fill(epoch_, index, out);
    return true;
  } catch (const std::exception& e) {
    return failed(e.what());
  }
}

bool RecordFeed::take_window(std::uint64_t index, sluice_record& out) {
  const text::Packing& windows = *source_->windows();
  const std::uint64_t n = windows.seq_len() + std::uint64_t{1};
  tokens_.resize(n);
  windows.read_window(index, tokens_.data());
  if (fields_.empty()) fields_.resize(1);
  set_vector(fields_[0], "tokens", tokens_.data(), DType::i64, n);
  set_record(out, index, fields_, 1);
  return true;
}

bool RecordFeed::take_packed(std::uint64_t index, sluice_record& out) {
  const text::PackedSource& packed = *source_->packed();
  packed.fill(epoch_, index, {tokens_.data(), targets_.data(), segment_ids_.data(), positions_.data(), loss_mask_.data()});
  const std::uint64_t L = packed.seq_len();
  set_vector(fields_[0], "tokens", tokens_.data(), DType::i64, L);
  set_vector(fields_[1], "targets", targets_.data(), DType::i64, L);
  set_vector(fields_[2], "segment_ids", segment_ids_.data(), DType::i32, L);
  set_vector(fields_[3], "positions", positions_.data(), DType::i32, L);
  set_vector(fields_[4], "loss_mask", loss_mask_.data(), DType::f32, L);
  set_record(out, index, fields_, 5);
  return true;
}

bool RecordFeed::publish(const io::Sample& sample, sluice_record& out) {
  if (fields_.size() < sample.fields.size()) fields_.resize(sample.fields.size());
  for (std::size_t k = 0; k < sample.fields.size(); ++k) {
    const io::Field& field = sample.fields[k];
    sluice_record_field& f = fields_[k];
    f.name = field.name.data();
    f.name_len = field.name.size();
    f.data = field.bytes.data();
    f.size = field.bytes.size();
    f.dtype = -1;
    f.ndim = 1;
    f.shape[0] = static_cast<std::int64_t>(field.bytes.size());
  }
  out = sluice_record{};
  out.record = sample.record;
  out.offset = sample.offset;
  out.label = sample.label;
  set_path(out, sample.path);
  out.key = sample.key.data();
  out.key_len = sample.key.size();
  out.fields = fields_.data();
  out.field_count = static_cast<std::uint32_t>(sample.fields.size());
  return true;
}

// The record's file: a remote object's URL rather than its cache copy.
void RecordFeed::set_path(sluice_record& out, std::string_view path) const {
  const std::string* url = source_->url_of(path);
  const std::string_view shown = url != nullptr ? std::string_view(*url) : path;
  out.path = shown.data();
  out.path_len = shown.size();
}

// The reason reaches the user as the sample's error: the run's, or under
// on_error = "skip" its skip reason (stats, the skip log), never the host's stderr.
bool RecordFeed::failed(std::string reason) {
  error_ = source_->named(std::move(reason));
  return false;
}

}  // namespace sluice::scripting
