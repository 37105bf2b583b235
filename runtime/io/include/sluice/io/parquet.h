// sluice/io/parquet.h: Apache Parquet tables, read by row.
//
// ParquetFile reads a file's footer (Thrift compact protocol): the schema's
// leaf columns, the row groups and their column chunks; it keeps no
// descriptor open. A ParquetReader opens the files it reads on first use
// and reads each column chunk it decodes with one pread into a buffer it
// reuses.
// ParquetReader reads rows of one or more files by a global row index: the
// row group holding the row is decoded once, every selected column of it,
// and kept while its rows are wanted (the last `cached_row_groups` groups
// decoded), so reading in a shuffled order within a window of row groups
// decodes each group once. Each decoded column is one contiguous array:
// read_run() hands out a run of consecutive rows column by column, for a
// batch filler to copy each column's run with one loop (copy_run) instead of
// reading row by row; rows read out of order are served from a row-major
// copy of the fixed-size columns, one cache line per row of up to 64 bytes,
// and read_group() hands out a whole group for a batch filler to gather the
// rows of it that a batch holds, column by column (gather_rows), or a row's
// side-by-side columns with one copy (join_runs).
//
// What is read: physical types BOOLEAN, INT32, INT64, INT96 (Spark's
// timestamps: int64 microseconds since the epoch, as Spark means them), FLOAT, DOUBLE, BYTE_ARRAY,
// FIXED_LEN_BYTE_ARRAY; logical types string, enum, json, bson, uuid (bytes),
// the integer widths (int8..uint64), date (int32 days), time and timestamp
// (their integer in their unit), decimal (float64: the double nearest
// unscaled / 10^scale), float16; nullable columns (a null row is empty; a
// null string has no data, an empty one has) and lists of fixed-size
// values (a row holds the list's elements); data pages v1 and v2, dictionary
// pages; encodings PLAIN, PLAIN_DICTIONARY, RLE_DICTIONARY, RLE (levels,
// booleans), DELTA_BINARY_PACKED, DELTA_LENGTH_BYTE_ARRAY, DELTA_BYTE_ARRAY,
// BYTE_STREAM_SPLIT; codecs none, SNAPPY, GZIP, ZSTD, LZ4_RAW, Hadoop's LZ4,
// BROTLI. Page CRCs are checked where written.
//
// Errors: sluice::Error naming the file, and where it matters the row group,
// the column and the feature. What Sluice does not read (maps, nested lists,
// structs in lists, lists of byte arrays, null list elements, encryption,
// LZO, BIT_PACKED levels) is refused by name, never read wrongly. A leaf
// column Sluice cannot read is listed with its reason; only selecting it
// fails, by the leaf's path or by the group's own name (a map, a struct,
// whose fields are leaf columns of their own).
//
// Thread safety and fork: a ParquetFile is immutable once built and holds
// no resources, so it crosses fork() freely. A ParquetReader holds decoded
// row groups, scratch buffers and, once it has read, open descriptors: one
// per thread (or worker process); make it after fork.
#pragma once

#include "sluice/export.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/dtype.h"

namespace sluice::io {

namespace parquet {
struct FileMeta;
}

struct SLUICE_API ParquetColumnInfo {
  std::string name;              // dotted path; a list column by the list's name
  std::string physical;          // "INT32", "BYTE_ARRAY", ...
  std::string logical;           // "string", "timestamp(micros, UTC)", "decimal(9,2)", or ""
  std::optional<DType> dtype;    // the elements' type; none: bytes
  std::size_t fixed_bytes = 0;   // bytes of a FIXED_LEN_BYTE_ARRAY value (without dtype too); else 0
  bool nullable = false;
  bool list = false;
  std::string unsupported;       // why Sluice cannot read it, or ""
  // Its type as `sluice inspect` shows it: "INT64 (int(64, signed))", "DOUBLE".
  std::string type() const { return physical + (logical.empty() ? "" : " (" + logical + ")"); }
};

struct SLUICE_API ParquetRowGroupInfo {
  std::uint64_t rows = 0;
  std::uint64_t compressed_bytes = 0;
  std::uint64_t uncompressed_bytes = 0;
  std::vector<std::string> codecs;  // one per leaf column
};

class SLUICE_API ParquetFile {
 public:
  // Reads `path`'s footer. Throws sluice::Error naming the file.
  explicit ParquetFile(std::string path);
  ~ParquetFile();
  ParquetFile(const ParquetFile&) = delete;
  ParquetFile& operator=(const ParquetFile&) = delete;

  const std::string& path() const { return path_; }
  std::uint64_t rows() const;
  const std::string& created_by() const;
  const std::vector<ParquetColumnInfo>& columns() const { return columns_; }
  std::vector<ParquetRowGroupInfo> row_groups() const;
  // The leaf column named `name` (its dotted path, or a list's name), or -1.
  // Throws sluice::Error naming the file when `name` names two columns that
  // can be read (a struct's field "s.a" and a column named "s.a").
  int column(std::string_view name) const;
  // What `sluice inspect` prints: schema, row groups, codecs, rows.
  std::string describe() const;

  std::uint64_t size() const { return size_; }
  // Internal (the reader's): the parsed footer.
  const parquet::FileMeta& meta() const { return *meta_; }

 private:
  std::string path_;
  std::uint64_t size_ = 0;
  std::unique_ptr<parquet::FileMeta> meta_;
  std::vector<ParquetColumnInfo> columns_;
};

// One column's value in one row: `bytes` bytes holding bytes / dtype_size
// elements of the column's dtype (a scalar, or a list's elements), or the
// raw bytes of a string or byte column; 0 bytes for a null, and data null
// too for a null string or byte value (an empty one has data). Valid until
// the reader's next read() or clear(). Thread safety: the reader's.
struct ParquetValue {
  const std::byte* data = nullptr;
  std::size_t bytes = 0;
};

// Consecutive rows of one column in one decoded row group: row i of the run
// at data + i * stride, `width` bytes each. data is null where the column
// is not dense in that row group (it has nulls, lists or bytes): read those
// rows with read(). Valid as long as a ParquetValue is.
struct ParquetColumnRun {
  const std::byte* data = nullptr;
  std::size_t width = 0;
  std::size_t stride = 0;
};

// Copies `rows` rows of `run` (its data not null) to dst + i * dst_stride,
// one tight loop for the column (widths 1, 2, 4 and 8 without a call per
// value): how a batch filler puts a run of rows into its slots.
SLUICE_API void copy_run(const ParquetColumnRun& run, std::uint64_t rows, std::byte* dst,
                         std::size_t dst_stride) noexcept;

// Copies row rows[i] of `run` (its data not null: a whole row group's
// column as read_group() gives it) to dst + at[i] * dst_stride, for each
// i < rows.size() (at has as many): one tight loop for the column, as
// copy_run. How a batch filler puts rows read out of order into its slots
// without reading them one by one.
// Rows are prefetched a few ahead (the batch's rows are known), and widths
// 16, 32 and 64 (joined runs, below) also copy without a call per value.
SLUICE_API void gather_rows(const ParquetColumnRun& run, std::span<const std::uint64_t> rows,
                            std::span<const std::uint32_t> at, std::byte* dst, std::size_t dst_stride) noexcept;

// What gather_rows takes from a batch: of the batch positions `pending`
// (samples[j]: the global row at position j), those whose row lies in
// [begin, end) (read_group's answer) go to rows (as row - begin) and at (the
// positions), in pending's order; pending keeps the others. Without a branch
// a row: a shuffled batch's rows fall in one group or another at random.
SLUICE_API void take_group_rows(std::span<const std::uint64_t> samples, std::uint64_t begin, std::uint64_t end,
                                std::vector<std::uint32_t>& pending, std::vector<std::uint64_t>& rows,
                                std::vector<std::uint32_t>& at);

// Joins, in place, each run that starts where the one before it ends in
// every row (data == before's data + width, the same stride: the
// interleaved columns read_group() gives) into that one, its width the sum;
// returns how many runs are left, runs[0, that). A batch filler whose slots
// hold those columns side by side too then gathers or copies a row's values
// with one copy instead of one per column. Null runs are never joined.
SLUICE_API std::size_t join_runs(std::span<ParquetColumnRun> runs) noexcept;

// A field's place in rows of a row-major table (what gather_rows writes
// from a run as wide as a row) and the array split_rows() copies it to.
struct ParquetRowField {
  std::size_t offset = 0, width = 0;
  std::byte* dst = nullptr;
};

// For each row i < n whose mark[i] is not 0: each field's `width` bytes at
// rows + i * stride + offset to dst + i * width. Four fields of 4 bytes side
// by side in the row and next to each other in `fields` (give them in order
// of offset), over four marked rows, are one 4x4 transpose. For a
// batch that keeps each field in its own array: its rows gathered whole
// into a row-major scratch at their batch positions (one copy a row), then
// split into the fields' arrays (contiguous stores) instead of gathered
// field by field.
SLUICE_API void split_rows(const std::byte* rows, std::size_t stride, std::size_t n, const std::uint8_t* mark,
                           std::span<const ParquetRowField> fields) noexcept;

struct ParquetReaderOptions {
  std::size_t cached_row_groups = 2;  // decoded row groups kept, at least 1
  // A column chunk (one column of one row group) that decodes to more bytes
  // than this is refused: the bound on what a corrupt file can make a
  // reader allocate.
  std::uint64_t max_chunk_bytes = 1ull << 32;
};

// Not thread-safe: one per thread, made after fork(). read() allocates only
// while its buffers grow to the largest row group read so far.
class SLUICE_API ParquetReader {
 public:
  // Reads `columns` (leaf names; empty: every column) of `files`, which
  // must all have them with the same types; without a selection the files
  // must have the same columns, in any order. Throws sluice::Error naming
  // the file and column that is missing, unreadable or of another type; a
  // map or struct named as one column is refused as what it is (a struct
  // with its fields' names), files whose columns differ with both files and
  // the columns each lacks.
  ParquetReader(std::vector<std::shared_ptr<const ParquetFile>> files, std::vector<std::string> columns,
                ParquetReaderOptions options = {});
  ~ParquetReader();
  ParquetReader(const ParquetReader&) = delete;
  ParquetReader& operator=(const ParquetReader&) = delete;

  std::uint64_t rows() const { return starts_.empty() ? 0 : starts_.back(); }
  const std::vector<std::string>& column_names() const { return names_; }
  // The selected columns' descriptions, as in the first file.
  const std::vector<ParquetColumnInfo>& column_infos() const { return infos_; }

  // Row `row` (across all files): out[c] for column c. Decodes the row's
  // group unless it is cached. Throws sluice::Error naming the file, row
  // group and column.
  void read(std::uint64_t row, std::span<ParquetValue> out);

  // Rows [row, row + n) of every column (out[c] for column c), where n is
  // `count` or fewer: the rows left in `row`'s row group. Decodes the group
  // unless it is cached. A batch of consecutive rows is copied column by
  // column (copy_run) instead of row by row. Returns n, at least 1; throws
  // as read() does (past the last row, when count is 0: nothing read, 0).
  std::uint64_t read_run(std::uint64_t row, std::uint64_t count, std::span<ParquetColumnRun> out);

  // Every row of `row`'s row group, column by column (out[c] for column c,
  // from the group's first row; data null where the column is not dense, as
  // read_run()), for gathering rows read out of order (gather_rows). Decodes
  // the group unless it is cached, and interleaves its dense columns as a
  // read() out of order does, so that the rows a batch gathers lie on one
  // or two cache lines each. Returns the group's rows [first, end) as global
  // row numbers; throws as read() does.
  std::pair<std::uint64_t, std::uint64_t> read_group(std::uint64_t row, std::span<ParquetColumnRun> out);

  // Forgets the decoded row groups, keeping their memory for the next ones
  // (a long-lived reader stops allocating once its buffers have grown).
  void clear() noexcept;

  // A hint that `row` will be read soon: when its row group is decoded,
  // starts loading the row into the CPU cache. Never decodes, never throws.
  // A batch filler that knows its rows calls it a few rows ahead, so reads
  // in a shuffled order wait less for memory.
  void prefetch(std::uint64_t row) const noexcept;
  // The step before prefetch() for a row further ahead (about twice as
  // far): where its variable-length values start and end, which prefetch()
  // must load before it can ask for the values themselves.
  void prefetch_offsets(std::uint64_t row) const noexcept;

  // Which file holds `row`, and the row within it.
  std::pair<std::size_t, std::uint64_t> locate(std::uint64_t row) const;
  const ParquetFile& file(std::size_t i) const { return *files_[i]; }
  // Row groups decoded so far (for tests and benchmarks).
  std::uint64_t groups_decoded() const { return decoded_; }

  struct Group;  // a decoded row group (internal, in parquet_reader.cpp)

 private:
  struct Place {
    std::size_t file, group;
    std::uint64_t row;  // within the group
  };
  Place place(std::uint64_t row) const;
  Group& load(std::size_t file, std::size_t group);
  Group& group_of(std::uint64_t row);  // cached or loaded

  std::vector<std::shared_ptr<const ParquetFile>> files_;
  std::vector<std::string> names_;
  std::vector<ParquetColumnInfo> infos_;
  std::vector<std::vector<int>> leaf_;            // [file][column]: leaf index
  std::vector<std::uint64_t> starts_;             // file f's rows start at starts_[f]; back(): total
  std::vector<std::vector<std::uint64_t>> group_starts_;  // [file][group], plus the file's rows
  ParquetReaderOptions options_;
  std::vector<std::unique_ptr<Group>> cache_;
  std::uint64_t tick_ = 0;
  std::uint64_t decoded_ = 0;
  std::unique_ptr<struct ParquetDecoderState> state_;
};

}  // namespace sluice::io
