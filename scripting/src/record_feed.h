// record_feed.h: how one process takes the records of a native source, in the
// order its batches need them.
//
// In a worker (for_worker, after fork):
//   indexed  an io::AsyncReader on the worker's own libuv loop. upcoming()
//            enqueues every announced batch's samples, so reads run up to
//            `read_ahead` samples ahead of the sample being made; take() hands
//            them back in announce order. Samples announced but not asked for
//            (dropped by on_error = skip, or left by a failed fill) are read
//            and discarded, so the reader stays in step with the batches.
//            Lazy remote shards (DataSource::lazy_remote): a remote::Prefetcher
//            (its thread, made here, after fork) fetches into the node cache
//            the shards of the batch being filled and of the announced ones
//            (needed: fetched whatever the budget), then those of the plan's
//            next batches (look_ahead) up to `prefetch_bytes` of shards
//            (ahead: only within cache_limit). An announced batch's reads are
//            enqueued once its shards are local; begin_batch() blocks until
//            the batch's own are, and throws the download's error (naming the
//            URL) when one failed. The order of that list is the cache's
//            eviction order (next use), and shards it leaves out are unpinned.
//   stream   the worker's partition of the shards (partition `worker` of
//            `workers`), read front to back; take() returns the next record,
//            whatever the index, starting a new pass when the partition ends.
//   npy      rows in place in the mapping (Fortran order: copied to scratch).
//   parquet  rows in place in the row group this feed's io::ParquetReader
//            decoded (kept while its rows are wanted), views valid until the
//            next take().
//   tokens   a document's tokens in place in the mapping (field "tokens"), or
//            a window of window + 1 tokens, widened to int64 (field "tokens").
//   packed   the row (sluice/text/packing.h) of the batch's epoch, computed
//            into this object's buffers: fields tokens, targets, segment_ids,
//            positions, loss_mask.
// In the launching process (for_launcher): synchronous reads, no libuv, for
// load_script's check of sample 0; under on_error = skip a bad record there is
// passed over for the next one.
//
// Errors: take() never throws; it returns false and error() names the file and
// the byte offset or record. Under on_error = skip a worker also prints that
// reason on stderr, since the runtime keeps only the sample's id.
//
// Hot path: take() reuses the reader's per-slot buffers and this object's
// field and scratch storage; it allocates only when a sample has more fields
// than any before it, or to report an error.
//
// Thread safety: one per process, used by one thread.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "data_source.h"
#include "ffi_api.h"
#include "sluice/io/async_reader.h"
#include "sluice/io/sample.h"
#include "sluice/plan.h"
#include "sluice/producer.h"
#include "sluice/remote/prefetcher.h"
#include "sluice/remote/transfer.h"

namespace sluice::scripting {

struct FeedOptions {
  std::uint32_t worker = 0;
  std::uint32_t workers = 1;       // stream partitions
  std::uint32_t read_ahead = 64;   // indexed: reads in flight or ready ahead of take()
  std::uint32_t io_threads = 4;    // libuv thread-pool size in the worker
  std::uint32_t row_groups = 0;    // parquet: decoded row groups the reader keeps at least
  std::uint64_t prefetch_bytes = 256ULL << 20;  // lazy remote shards: fetched ahead of the reads
  OnError on_error = OnError::fail;
};

class RecordFeed {
 public:
  static std::unique_ptr<RecordFeed> for_worker(std::shared_ptr<const DataSource> source,
                                                const FeedOptions& options);
  static std::unique_ptr<RecordFeed> for_launcher(std::shared_ptr<const DataSource> source,
                                                  const FeedOptions& options);
  ~RecordFeed();
  RecordFeed(const RecordFeed&) = delete;
  RecordFeed& operator=(const RecordFeed&) = delete;

  // A batch this process will fill later (Producer::upcoming).
  void upcoming(std::uint64_t epoch, std::uint64_t batch, std::span<const std::uint64_t> samples);
  // The plan every batch comes from (Producer::look_ahead), for fetching
  // remote shards ahead (up to end_seq, the run's end); kept by reference.
  void look_ahead(const EpochPlan& plan, std::uint64_t end_seq);
  // The batch about to be filled, with its samples: drops reads left over
  // from earlier batches. Throws sluice::Error when a shard it needs could
  // not be fetched.
  void begin_batch(std::uint64_t epoch, std::uint64_t batch, std::span<const std::uint64_t> samples);
  // What this feed's remote fetching did so far (zero without lazy shards;
  // the launcher's: its trial's ranged reads),
  // how long begin_batch() waited for shards, and the downloads finished
  // since the last call (Prefetcher::take_downloads).
  remote::CacheStats remote_stats() const;
  std::uint64_t remote_wait_ns() const { return remote_wait_ns_; }
  std::vector<remote::DownloadSpan> take_downloads();
  // The record for dataset index `index`, as views into *out; false on a bad
  // record (see error()).
  bool take(std::uint64_t index, sluice_record& out) noexcept;
  const std::string& error() const { return error_; }
  // packed: the row for dataset index `index` of the current batch's epoch
  // straight into `out` (each seq_len long); false (see error()) otherwise.
  bool fill_packed(std::uint64_t index, const text::PackedRow& out) noexcept;
  // parquet: the samples of the batch straight into their slots (see
  // sluice_ffi_api::feed_fill_parquet): a run of consecutive rows of one
  // row group column by column (io::ParquetReader::read_run, io::copy_run),
  // the other rows gathered row group by row group, column by column
  // (read_group, io::gather_rows); columns that are not dense row by row; the bytes a row gets are those Lua's store() of
  // take()'s views would write. done[j] = 1 for each row written whole, 0
  // for one left to take() (a null, a list of another length, a string
  // longer than its bytes field, a read error, whose message take() then
  // gives). Returns the rows written, or -1 when the fields are not exactly
  // the columns (by name, dtype and shape; a bytes field is a byte column's). `batch`, if not null, hears begin_sample.
  std::int32_t fill_parquet(std::span<const std::uint64_t> samples, std::span<const sluice_parquet_slot> slots,
                            std::uint8_t* done, const BatchContext* batch) noexcept;
  // parquet: row groups this feed's reader decoded so far (0 for other sources).
  std::uint64_t row_groups_decoded() const { return parquet_ ? parquet_->groups_decoded() : 0; }
  // parquet: rows fill_parquet gathered from a row group read out of order
  // (not from a run of consecutive rows), for tests and benchmarks.
  std::uint64_t parquet_rows_gathered() const { return rows_gathered_; }

 private:
  struct Announced {
    std::uint64_t epoch, batch;
    std::size_t remaining;  // of its samples, not yet taken from the reader
    std::vector<std::uint32_t> objects;  // lazy remote: the shards its samples lie in
  };
  struct Waiting {  // lazy remote: announced, its shards not all local yet
    std::uint64_t epoch, batch;
    std::vector<std::uint64_t> samples;
    std::vector<std::uint32_t> objects;
  };
  std::vector<std::uint32_t> objects_of(std::span<const std::uint64_t> samples) const;
  void update_window(std::size_t waiting_needed);
  void extend_ahead();
  void start_ready_reads();
  RecordFeed(std::shared_ptr<const DataSource> source, const FeedOptions& options, bool worker);
  bool take_indexed(std::uint64_t index, sluice_record& out);
  void read_remote_trial(std::uint64_t id);
  bool take_stream(sluice_record& out);
  bool take_npy(std::uint64_t index, sluice_record& out);
  bool take_parquet(std::uint64_t index, sluice_record& out);
  std::int32_t gather_parquet(std::span<const std::uint64_t> samples, std::span<const sluice_parquet_slot> slots,
                              std::uint8_t* done, const BatchContext* batch);
  std::int32_t gather_parquet_groups(std::span<const std::uint64_t> samples, std::span<const sluice_parquet_slot> slots,
                                     std::uint8_t* done, const BatchContext* batch);
  bool fields_in_row(std::span<const sluice_parquet_slot> slots, const std::byte** first, std::size_t* span,
                     std::size_t* stride);
  std::int32_t fill_parquet_rows(std::span<const std::uint64_t> samples, std::span<const sluice_parquet_slot> slots,
                                 std::span<const std::uint32_t> at, std::uint8_t* done);
  bool take_tokens(std::uint64_t index, sluice_record& out);
  bool take_window(std::uint64_t index, sluice_record& out);
  bool take_packed(std::uint64_t index, sluice_record& out);
  void discard(std::size_t count);
  void discard_all();
  bool publish(const io::Sample& sample, sluice_record& out);
  void set_path(sluice_record& out, std::string_view path) const;
  bool failed(std::string reason);

  std::shared_ptr<const DataSource> source_;
  FeedOptions options_;
  bool worker_;
  // indexed
  std::unique_ptr<io::AsyncReader> reader_;
  std::deque<Announced> announced_;
  std::size_t current_ = 0;        // samples of the batch being filled still in the reader
  std::vector<std::byte> buffer_;  // launcher reads
  // lazy remote shards
  std::unique_ptr<remote::Prefetcher> fetch_;     // worker
  std::unique_ptr<remote::Cache> launcher_cache_;  // launcher: a trial sample's shard, when whole
  remote::CacheStats trial_stats_;                 // launcher: its ranged reads
  std::string trial_download_error_;               // launcher: a failed download, thrown again
  const EpochPlan* plan_ = nullptr;
  std::deque<Waiting> waiting_;
  std::vector<std::uint32_t> current_objects_;
  std::uint64_t last_seq_ = 0;     // the latest batch announced or begun
  std::uint64_t end_seq_ = UINT64_MAX;  // the run's end: no batch at or after it
  std::deque<std::pair<std::uint64_t, std::vector<std::uint32_t>>> ahead_;  // plan batches after last_seq_
  std::vector<std::uint32_t> ahead_count_;  // per shard: batches of ahead_ in it
  std::uint64_t ahead_bytes_ = 0;           // the shards of ahead_, each once
  std::uint64_t ahead_limit_ = 0;           // prefetch_bytes, as Prefetcher::ahead_limit allows
  std::vector<std::uint64_t> plan_ids_;
  std::uint64_t remote_wait_ns_ = 0;
  // stream
  std::unique_ptr<io::RecordStream> stream_;
  std::uint64_t pass_ = 0;
  std::size_t skips_seen_ = 0;
  bool held_ = false;              // sample_ is a good record not handed out yet
  // npy
  std::vector<std::vector<std::byte>> rows_;  // Fortran-order rows, gathered
  // parquet
  std::unique_ptr<io::ParquetReader> parquet_;
  std::vector<io::ParquetValue> parquet_values_;
  std::vector<io::ParquetColumnRun> parquet_runs_;
  std::vector<int> slot_column_;  // fill_parquet: field k's column; empty until planned
  std::vector<char> slot_copied_; // fill_parquet: field k of the current run copied column-wise
  int slot_plan_ = -1;            // fill_parquet: -1 not planned, 0 the fields are not the columns, 1 they are
  std::vector<std::uint32_t> gather_at_;   // fill_parquet: batch positions of the rows not in a run
  std::vector<std::uint32_t> group_at_;    // fill_parquet: batch positions of one row group's rows
  std::vector<std::uint64_t> group_rows_;  // fill_parquet: those rows within the group
  // gather_parquet: the batch's gathered rows whole, row-major at their batch
  // positions (split_stride_ bytes a row), marked, and split into the fields
  // (io::split_rows) once the batch's groups are gathered.
  std::vector<std::byte> split_scratch_;
  std::vector<std::uint8_t> split_mark_;
  std::vector<io::ParquetRowField> split_fields_, group_fields_;
  std::vector<std::size_t> row_order_;  // fields_in_row: the copied slots in their row's order, as last found
  std::size_t split_stride_ = 0;
  std::uint64_t rows_gathered_ = 0;
  // packed
  std::uint64_t epoch_ = 0;        // of the batch being filled (begin_batch)
  std::vector<std::int64_t> tokens_, targets_;
  std::vector<std::int32_t> segment_ids_, positions_;
  std::vector<float> loss_mask_;
  io::Sample sample_;
  std::vector<sluice_record_field> fields_;
  std::string error_;
};

// What the sluice_fill_view's host points at: the batch being filled (for
// begin_sample) and the feed, either of which may be null.
struct FeedHost {
  const BatchContext* batch = nullptr;
  RecordFeed* feed = nullptr;
};

}  // namespace sluice::scripting
