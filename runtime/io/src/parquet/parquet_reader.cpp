// ParquetReader: global rows to (file, row group, row), decoded row groups
// kept in a small least-recently-used cache.
#include <algorithm>
#include <cstring>
#include <string>
#if defined(__SSE2__)
#include <xmmintrin.h>
#endif

#include "file_util.h"
#include "parquet/column_chunk.h"
#include "parquet/metadata.h"
#include "sluice/error.h"
#include "sluice/io/parquet.h"

namespace sluice::io {

struct ParquetDecoderState {
  explicit ParquetDecoderState(std::uint64_t max_bytes) : decoder(max_bytes) {}
  parquet::ChunkDecoder decoder;
  parquet::ByteBuffer chunk;  // the column chunk being decoded, as read
  std::vector<detail::Fd> fds;  // [file]: opened on its first read
};

namespace {
// Dense columns in row order, for interleave(): count > 0 for `count` columns
// of 4 bytes from `column` on, side by side in the row; 0 for one column of
// another width.
struct Span {
  std::size_t column, count;
};
}  // namespace

struct ParquetReader::Group {
  std::size_t file = SIZE_MAX, group = SIZE_MAX;
  std::uint64_t first = 0, end = 0;  // its rows, as global row numbers
  std::uint64_t used = 0;
  std::vector<parquet::ColumnValues> columns;
  std::vector<parquet::OutputType> types;
  // Dense fixed-size columns, interleaved row by row (stride bytes a row;
  // column c at offset[c], or -1 when it is not among them): a row read in
  // a shuffled order touches one or two cache lines instead of one per
  // column. Made on the group's first read out of order; reads in order
  // stream the columns as decoded.
  parquet::ByteBuffer rows;
  std::size_t stride = 0;
  std::vector<std::ptrdiff_t> offset;
  bool interleaved = false;
  std::uint64_t last = UINT64_MAX;  // the row read last, within the group
  // Columns not dense (bytes, nulls, lists), whose rows lie apart: what
  // prefetch() touches besides the interleaved row.
  std::vector<std::size_t> scattered;
  std::vector<Span> spans;              // interleave()'s scratch, kept with its capacity
  std::vector<const std::byte*> words;
};

namespace {

// Copies rows [first, first + n) of `count` columns of 4 bytes each, column
// k at src[k], into rows of `stride` bytes, the columns side by side from
// dst: four columns of four rows at a time are one 4x4 transpose (four
// loads, four stores) instead of sixteen loads and stores. Bit-exact: the
// shuffles move bytes, no value is converted.
void interleave_words(const std::byte* const* src, std::size_t count, std::uint64_t first, std::uint64_t n,
                      std::byte* dst, std::size_t stride) noexcept {
  std::size_t k = 0;
#if defined(__SSE2__)
  for (; k + 4 <= count; k += 4) {
    const auto* a = reinterpret_cast<const float*>(src[k] + first * 4);
    const auto* b = reinterpret_cast<const float*>(src[k + 1] + first * 4);
    const auto* c = reinterpret_cast<const float*>(src[k + 2] + first * 4);
    const auto* d = reinterpret_cast<const float*>(src[k + 3] + first * 4);
    std::byte* out = dst + k * 4;
    std::uint64_t r = 0;
    for (; r + 4 <= n; r += 4) {
      __m128 r0 = _mm_loadu_ps(a + r), r1 = _mm_loadu_ps(b + r), r2 = _mm_loadu_ps(c + r), r3 = _mm_loadu_ps(d + r);
      _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
      _mm_storeu_ps(reinterpret_cast<float*>(out + r * stride), r0);
      _mm_storeu_ps(reinterpret_cast<float*>(out + (r + 1) * stride), r1);
      _mm_storeu_ps(reinterpret_cast<float*>(out + (r + 2) * stride), r2);
      _mm_storeu_ps(reinterpret_cast<float*>(out + (r + 3) * stride), r3);
    }
    for (; r < n; ++r)
      for (std::size_t j = 0; j < 4; ++j) std::memcpy(out + r * stride + j * 4, src[k + j] + (first + r) * 4, 4);
  }
#endif
  for (; k < count; ++k)
    for (std::uint64_t r = 0; r < n; ++r) std::memcpy(dst + r * stride + k * 4, src[k] + (first + r) * 4, 4);
}

// Copies the dense fixed-size columns of `g` into g.rows, row-major, in
// blocks of rows that stay in cache; side-by-side columns of 4 bytes go
// through interleave_words.
void interleave(ParquetReader::Group& g) {
  g.interleaved = true;
  g.stride = 0;
  g.offset.assign(g.columns.size(), -1);
  std::size_t dense = 0;
  for (std::size_t c = 0; c < g.columns.size(); ++c) {
    if (!g.columns[c].dense) continue;
    g.offset[c] = static_cast<std::ptrdiff_t>(g.stride);
    g.stride += g.types[c].width;
    ++dense;
  }
  if (dense < 2) {  // nothing to gain: the columns stay as decoded
    g.offset.assign(g.columns.size(), -1);
    g.stride = 0;
    return;
  }
  // The dense columns in row order: runs of 4-byte ones (words) and the others.
  std::vector<Span>& spans = g.spans;
  std::vector<const std::byte*>& words = g.words;
  spans.clear();
  words.clear();
  for (std::size_t c = 0; c < g.columns.size(); ++c) {
    if (g.offset[c] < 0) continue;
    if (g.types[c].width == 4 && !spans.empty() && spans.back().count > 0) {
      ++spans.back().count;
    } else {
      spans.push_back({c, g.types[c].width == 4 ? std::size_t{1} : 0});
    }
    words.push_back(g.columns[c].data.data());
  }
  const std::uint64_t rows = g.columns[0].rows;
  g.rows.resize(rows * g.stride);
  constexpr std::uint64_t kBlock = 256;
  for (std::uint64_t first = 0; first < rows; first += kBlock) {
    const std::uint64_t n = std::min(kBlock, rows - first);
    std::size_t word = 0;  // index in `words` of the span's first column
    for (const Span& span : spans) {
      const std::size_t c = span.column;
      std::byte* dst = g.rows.data() + first * g.stride + g.offset[c];
      if (span.count > 0) {
        interleave_words(words.data() + word, span.count, first, n, dst, g.stride);
        word += span.count;
        continue;
      }
      ++word;
      const std::size_t w = g.types[c].width;
      const std::byte* src = g.columns[c].data.data() + first * w;
      switch (w) {
        case 8:
          for (std::uint64_t r = 0; r < n; ++r) std::memcpy(dst + r * g.stride, src + r * 8, 8);
          break;
        default:
          for (std::uint64_t r = 0; r < n; ++r) std::memcpy(dst + r * g.stride, src + r * w, w);
      }
    }
  }
}

// A column's type as `sluice inspect` shows it: "INT64 (int(64, signed))",
// "a list of INT32", "DOUBLE".
std::string type_text(const ParquetColumnInfo& c) {
  return (c.list ? "a list of " : "") + c.type();
}

// Throws when `name` is not a leaf column of `file` but a group of them (a
// map, a struct): the group refused by what it is, naming the file. Returns
// when it names no group.
void refuse_group(const ParquetFile& file, const std::string& name) {
  const auto& groups = file.meta().groups;
  const auto g =
      std::find_if(groups.begin(), groups.end(), [&](const parquet::GroupNode& n) { return n.path == name; });
  if (g == groups.end()) return;
  const std::string what = file.path() + ": column '" + name + "' is a " + g->kind;
  if (!g->unsupported.empty())
    throw Error(what + ": " + g->unsupported + " are not supported; leave it out with columns = {...}");
  std::string fields;  // its leaves, as columns = {...} names them
  for (std::size_t i = 0; i < file.columns().size(); ++i) {
    const std::string& leaf = file.meta().leaves[i].path;
    const std::string& column = file.columns()[i].name;
    if (leaf.starts_with(name + ".") && fields.find("'" + column + "'") == std::string::npos)
      fields += (fields.empty() ? "'" : ", '") + column + "'";
  }
  throw Error(what + ": " + g->kind + "s are not supported as one column; select its fields with columns = { " +
              fields + " }");
}

// Without a selection of columns, `other` must have the columns `first` has,
// no more, no fewer (by name): else which differ, both ways.
void check_same_columns(const ParquetFile& first, const ParquetFile& other) {
  auto lacking = [](const ParquetFile& a, const ParquetFile& b) {  // a's columns b has not, "x, y"
    std::string list;
    for (const ParquetColumnInfo& c : a.columns())
      if (b.column(c.name) < 0 && list.find("'" + c.name + "'") == std::string::npos)
        list += (list.empty() ? "'" : ", '") + c.name + "'";
    return list;
  };
  const std::string only_first = lacking(first, other), only_other = lacking(other, first);
  if (only_first.empty() && only_other.empty()) return;
  std::string why;
  if (!only_first.empty()) why = other.path() + " lacks " + only_first + ", which " + first.path() + " has";
  if (!only_other.empty())
    why += (why.empty() ? "" : "; ") + other.path() + " has " + only_other + ", which " + first.path() + " lacks";
  throw Error("the files' columns differ: " + why +
              ". Files read together must have the same columns; columns = {...} selects the ones they share");
}

}  // namespace

ParquetReader::ParquetReader(std::vector<std::shared_ptr<const ParquetFile>> files, std::vector<std::string> columns,
                             ParquetReaderOptions options)
    : files_(std::move(files)), names_(std::move(columns)), options_(options),
      state_(std::make_unique<ParquetDecoderState>(options.max_chunk_bytes)) {
  if (files_.empty()) throw Error("no Parquet file given");
  if (options_.cached_row_groups == 0) options_.cached_row_groups = 1;
  const ParquetFile& first = *files_[0];
  const bool every = names_.empty();
  if (every)
    for (const ParquetColumnInfo& c : first.columns()) names_.push_back(c.name);
  for (const std::string& name : names_) {
    const int i = first.column(name);
    if (i < 0) {
      refuse_group(first, name);
      std::string have;
      for (const ParquetColumnInfo& c : first.columns()) have += (have.empty() ? "" : ", ") + c.name;
      throw Error(first.path() + ": no column '" + name + "' (it has " + have + ")");
    }
    const ParquetColumnInfo& info = first.columns()[static_cast<std::size_t>(i)];
    if (!info.unsupported.empty())
      throw Error(first.path() + ": column '" + name + "': " + info.unsupported +
                  " are not supported; leave it out with columns = {...}");
    infos_.push_back(info);
  }
  starts_.push_back(0);
  state_->fds.resize(files_.size());
  for (const auto& file : files_) {
    if (every) check_same_columns(first, *file);
    std::vector<int>& leaves = leaf_.emplace_back();
    for (std::size_t c = 0; c < names_.size(); ++c) {
      const int i = file->column(names_[c]);
      if (i < 0) {
        refuse_group(*file, names_[c]);
        throw Error(file->path() + ": no column '" + names_[c] + "' (" + first.path() + " has it)");
      }
      const ParquetColumnInfo& info = file->columns()[static_cast<std::size_t>(i)];
      if (!info.unsupported.empty())
        throw Error(file->path() + ": column '" + names_[c] + "': " + info.unsupported + " are not supported");
      if (info.dtype != infos_[c].dtype || info.list != infos_[c].list)
        throw Error(file->path() + ": column '" + names_[c] + "' is " + type_text(info) + ", in " + first.path() +
                    " it is " + type_text(infos_[c]));
      leaves.push_back(i);
    }
    std::vector<std::uint64_t>& groups = group_starts_.emplace_back();
    std::uint64_t at = 0;
    for (const parquet::RowGroupMeta& g : file->meta().row_groups) {
      groups.push_back(at);
      at += static_cast<std::uint64_t>(g.num_rows);
    }
    groups.push_back(at);
    starts_.push_back(starts_.back() + at);
  }
}

ParquetReader::~ParquetReader() = default;

std::pair<std::size_t, std::uint64_t> ParquetReader::locate(std::uint64_t row) const {
  if (row >= rows()) throw Error("row " + std::to_string(row) + " is past the " + std::to_string(rows()) + " rows");
  const auto it = std::upper_bound(starts_.begin(), starts_.end(), row);
  const auto f = static_cast<std::size_t>(it - starts_.begin()) - 1;
  return {f, row - starts_[f]};
}

ParquetReader::Group& ParquetReader::load(std::size_t file, std::size_t group) {
  Group* victim = nullptr;
  for (auto& g : cache_) {
    if (g->file == file && g->group == group) {
      g->used = ++tick_;
      return *g;
    }
    if (victim == nullptr || g->used < victim->used) victim = g.get();
  }
  if (cache_.size() < options_.cached_row_groups) {
    cache_.push_back(std::make_unique<Group>());
    victim = cache_.back().get();
  }
  Group& g = *victim;
  g.file = g.group = SIZE_MAX;  // invalid until decoded
  g.first = g.end = 0;
  const ParquetFile& f = *files_[file];
  g.columns.resize(names_.size());
  g.types.resize(names_.size());
  for (std::size_t c = 0; c < names_.size(); ++c) {
    const auto leaf = static_cast<std::size_t>(leaf_[file][c]);
    g.types[c] = parquet::output_type(f.meta().leaves[leaf]);
    try {
      // The chunk's bytes, read with one pread into the decoder's buffer.
      const parquet::ChunkRange range =
          parquet::chunk_range(f.meta().row_groups.at(group).chunks.at(leaf), f.size());
      detail::Fd& fd = state_->fds[file];
      if (fd.get() < 0) fd = detail::open_read(f.path());
      if (range.bytes > options_.max_chunk_bytes)
        throw Error("a column chunk of " + std::to_string(range.bytes) + " bytes, more than max_chunk_bytes");
      state_->chunk.resize(range.bytes);
      if (detail::pread_full(fd.get(), {state_->chunk.data(), range.bytes}, range.first, f.path()) != range.bytes)
        throw Error("the file ends inside the column chunk");
      state_->decoder.decode(f.meta(), group, leaf, state_->chunk.data(), range.bytes, range.first, g.columns[c]);
    } catch (const Error& e) {
      throw Error(f.path() + ": row group " + std::to_string(group) + ", column '" + names_[c] + "': " + e.what());
    }
  }
  g.interleaved = false;
  g.stride = 0;
  g.offset.assign(names_.size(), -1);
  g.scattered.clear();
  for (std::size_t c = 0; c < names_.size(); ++c)
    if (!g.columns[c].dense) g.scattered.push_back(c);
  g.last = UINT64_MAX;
  g.file = file;
  g.group = group;
  g.first = starts_[file] + group_starts_[file][group];
  g.end = g.first + static_cast<std::uint64_t>(f.meta().row_groups[group].num_rows);
  g.used = ++tick_;
  ++decoded_;
  return g;
}

ParquetReader::Place ParquetReader::place(std::uint64_t row) const {
  const auto [file, in_file] = locate(row);
  const std::vector<std::uint64_t>& groups = group_starts_[file];
  const auto it = std::upper_bound(groups.begin(), groups.end(), in_file);
  const auto group = static_cast<std::size_t>(it - groups.begin()) - 1;
  return {file, group, in_file - groups[group]};
}

void ParquetReader::clear() noexcept {
  for (auto& g : cache_) {
    g->file = g->group = SIZE_MAX;
    g->first = g->end = 0;
    g->used = 0;
  }
}

// A variable-length value of a row read soon, into the CPU cache: its first
// line with full locality (prefetcht0), the rest (up to kPrefetchValueBytes)
// with low locality (prefetcht2: the outer caches, L2 on the project's AMD
// VM). Shuffled reads of long strings wait on memory otherwise: the
// hardware prefetcher finds a value's lines only after its first misses,
// and sending every line to L1 crowds out the copy in progress (text rows of
// 1-4 KiB 8 ahead: a shuffled copy ~1.5x faster on that VM).
namespace {

constexpr std::size_t kPrefetchValueBytes = 16 << 10;

void prefetch_value(const std::byte* p, std::size_t bytes) noexcept {
  __builtin_prefetch(p);
  bytes = std::min(bytes, kPrefetchValueBytes);
  for (std::size_t at = 64; at < bytes; at += 64) __builtin_prefetch(p + at, 0, 1);
}

}  // namespace

void ParquetReader::prefetch(std::uint64_t row) const noexcept {
  for (const auto& g : cache_) {
    if (row < g->first || row >= g->end) continue;
    const std::uint64_t r = row - g->first;
    if (g->stride > 0) {
      const std::byte* p = g->rows.data() + r * g->stride;
      __builtin_prefetch(p);
      if (g->stride > 1) __builtin_prefetch(p + g->stride - 1);
    }
    for (std::size_t c : g->scattered) {
      const auto& column = g->columns[c];
      prefetch_value(column.data.data() + column.begins[r], column.ends[r] - column.begins[r]);
    }
    return;
  }
}

void ParquetReader::prefetch_offsets(std::uint64_t row) const noexcept {
  for (const auto& g : cache_) {
    if (row < g->first || row >= g->end) continue;
    const std::uint64_t r = row - g->first;
    for (std::size_t c : g->scattered) {
      __builtin_prefetch(g->columns[c].begins.data() + r);
      __builtin_prefetch(g->columns[c].ends.data() + r);
    }
    return;
  }
}

ParquetReader::Group& ParquetReader::group_of(std::uint64_t row) {
  // A row of a cached group is found by range, without searching the files.
  for (const auto& g : cache_) {
    if (row >= g->first && row < g->end) {
      g->used = ++tick_;
      return *g;
    }
  }
  const Place at = place(row);
  return load(at.file, at.group);
}

void ParquetReader::read(std::uint64_t row, std::span<ParquetValue> out) {
  Group& g = group_of(row);
  const std::uint64_t r = row - g.first;
  if (!g.interleaved && r != g.last + 1 && g.last != UINT64_MAX) interleave(g);
  g.last = r;
  const std::size_t n = std::min(out.size(), names_.size());
  const std::byte* row_at = g.stride > 0 ? g.rows.data() + r * g.stride : nullptr;
  for (std::size_t c = 0; c < n; ++c) {
    const parquet::ColumnValues& v = g.columns[c];
    if (g.offset[c] >= 0) {
      out[c].data = row_at + g.offset[c];
      out[c].bytes = g.types[c].width;
    } else if (v.dense) {
      out[c].data = v.data.data() + r * g.types[c].width;
      out[c].bytes = g.types[c].width;
    } else {
      const bool null = !v.nulls.empty() && v.nulls[r] != 0;
      out[c].data = null ? nullptr : v.data.data() + v.begins[r];
      out[c].bytes = v.ends[r] - v.begins[r];
    }
  }
}

std::uint64_t ParquetReader::read_run(std::uint64_t row, std::uint64_t count, std::span<ParquetColumnRun> out) {
  if (count == 0) return 0;
  Group& g = group_of(row);
  const std::uint64_t r = row - g.first;
  const std::uint64_t n = std::min(count, g.end - row);
  // The run reads whole columns: no reason to interleave the group, and a
  // read() of the next row still counts as reading in order.
  g.last = r + n - 1;
  const std::size_t columns = std::min(out.size(), names_.size());
  for (std::size_t c = 0; c < columns; ++c) {
    const std::size_t w = g.types[c].width;
    if (g.offset[c] >= 0) {
      out[c] = {g.rows.data() + r * g.stride + g.offset[c], w, g.stride};
    } else if (g.columns[c].dense) {
      out[c] = {g.columns[c].data.data() + r * w, w, w};
    } else {
      out[c] = {nullptr, w, 0};
    }
  }
  return n;
}

std::pair<std::uint64_t, std::uint64_t> ParquetReader::read_group(std::uint64_t row,
                                                                  std::span<ParquetColumnRun> out) {
  Group& g = group_of(row);
  if (!g.interleaved) interleave(g);
  g.last = UINT64_MAX;  // the next read() is not the continuation of a run
  const std::size_t columns = std::min(out.size(), names_.size());
  for (std::size_t c = 0; c < columns; ++c) {
    const std::size_t w = g.types[c].width;
    if (g.offset[c] >= 0) {
      out[c] = {g.rows.data() + g.offset[c], w, g.stride};
    } else if (g.columns[c].dense) {
      out[c] = {g.columns[c].data.data(), w, w};
    } else {
      out[c] = {nullptr, w, 0};
    }
  }
  return {g.first, g.end};
}

namespace {

constexpr std::size_t kGatherAhead = 16;  // rows prefetched ahead of the one gathered

template <std::size_t W>
void gather_fixed(const std::byte* src, std::size_t src_stride, const std::uint64_t* rows, const std::uint32_t* at,
                  std::size_t n, std::byte* dst, std::size_t dst_stride) noexcept {
  for (std::size_t i = 0; i < n; ++i) {
    if (i + kGatherAhead < n) __builtin_prefetch(src + rows[i + kGatherAhead] * src_stride);
    std::memcpy(dst + at[i] * dst_stride, src + rows[i] * src_stride, W);
  }
}

template <std::size_t W>
void copy_fixed(const std::byte* src, std::size_t src_stride, std::uint64_t rows, std::byte* dst,
                std::size_t dst_stride) noexcept {
  for (std::uint64_t i = 0; i < rows; ++i) std::memcpy(dst + i * dst_stride, src + i * src_stride, W);
}

}  // namespace
void copy_run(const ParquetColumnRun& run, std::uint64_t rows, std::byte* dst, std::size_t dst_stride) noexcept {
  if (run.data == nullptr || rows == 0) return;
  if (run.stride == run.width && dst_stride == run.width) {
    std::memcpy(dst, run.data, rows * run.width);
    return;
  }
  switch (run.width) {
    case 1: return copy_fixed<1>(run.data, run.stride, rows, dst, dst_stride);
    case 2: return copy_fixed<2>(run.data, run.stride, rows, dst, dst_stride);
    case 4: return copy_fixed<4>(run.data, run.stride, rows, dst, dst_stride);
    case 8: return copy_fixed<8>(run.data, run.stride, rows, dst, dst_stride);
    default:
      for (std::uint64_t i = 0; i < rows; ++i) std::memcpy(dst + i * dst_stride, run.data + i * run.stride, run.width);
  }
}

void gather_rows(const ParquetColumnRun& run, std::span<const std::uint64_t> rows, std::span<const std::uint32_t> at,
                 std::byte* dst, std::size_t dst_stride) noexcept {
  const std::size_t n = std::min(rows.size(), at.size());
  if (run.data == nullptr || n == 0) return;
  switch (run.width) {
    case 1: return gather_fixed<1>(run.data, run.stride, rows.data(), at.data(), n, dst, dst_stride);
    case 2: return gather_fixed<2>(run.data, run.stride, rows.data(), at.data(), n, dst, dst_stride);
    case 4: return gather_fixed<4>(run.data, run.stride, rows.data(), at.data(), n, dst, dst_stride);
    case 8: return gather_fixed<8>(run.data, run.stride, rows.data(), at.data(), n, dst, dst_stride);
    case 16: return gather_fixed<16>(run.data, run.stride, rows.data(), at.data(), n, dst, dst_stride);
    case 32: return gather_fixed<32>(run.data, run.stride, rows.data(), at.data(), n, dst, dst_stride);
    case 64: return gather_fixed<64>(run.data, run.stride, rows.data(), at.data(), n, dst, dst_stride);
    default:
      for (std::size_t i = 0; i < n; ++i) {
        if (i + kGatherAhead < n) __builtin_prefetch(run.data + rows[i + kGatherAhead] * run.stride);
        std::memcpy(dst + at[i] * dst_stride, run.data + rows[i] * run.stride, run.width);
      }
  }
}

void take_group_rows(std::span<const std::uint64_t> samples, std::uint64_t begin, std::uint64_t end,
                     std::vector<std::uint32_t>& pending, std::vector<std::uint64_t>& rows,
                     std::vector<std::uint32_t>& at) {
  rows.resize(pending.size());
  at.resize(pending.size());
  std::size_t in = 0, left = 0;
  for (std::size_t t = 0; t < pending.size(); ++t) {
    const std::uint32_t j = pending[t];
    const std::uint64_t r = samples[j] - begin;  // wraps for rows before begin
    const bool inside = r < end - begin;
    rows[in] = r;
    at[in] = j;
    in += inside;
    pending[left] = j;
    left += !inside;
  }
  rows.resize(in);
  at.resize(in);
  pending.resize(left);
}

std::size_t join_runs(std::span<ParquetColumnRun> runs) noexcept {
  std::size_t kept = 0;
  for (std::size_t k = 0; k < runs.size(); ++k) {
    ParquetColumnRun& last = runs[kept > 0 ? kept - 1 : 0];
    const ParquetColumnRun& run = runs[k];
    if (kept > 0 && last.data != nullptr && run.data == last.data + last.width && run.stride == last.stride) {
      last.width += run.width;
      continue;
    }
    runs[kept++] = run;
  }
  return kept;
}

void split_rows(const std::byte* rows, std::size_t stride, std::size_t n, const std::uint8_t* mark,
                std::span<const ParquetRowField> fields) noexcept {
  for (std::size_t k = 0; k < fields.size();) {
#if defined(__SSE2__)
    // fields [k, k + 4) of 4 bytes side by side: transposed four rows at a time
    bool quad = k + 4 <= fields.size();
    for (std::size_t j = k; quad && j < k + 4; ++j)
      quad = fields[j].width == 4 && fields[j].offset == fields[k].offset + (j - k) * 4;
    if (quad) {
      const std::byte* src = rows + fields[k].offset;
      float* d[4];
      for (std::size_t j = 0; j < 4; ++j) d[j] = reinterpret_cast<float*>(fields[k + j].dst);
      std::size_t i = 0;
      for (; i + 4 <= n; i += 4) {
        std::uint32_t marks;
        std::memcpy(&marks, mark + i, 4);
        if (marks == 0) continue;
        if (marks != 0x01010101u) {  // some rows of the four not marked (or marks other than 1): one by one
          for (std::size_t r = i; r < i + 4; ++r)
            if (mark[r] != 0)
              for (std::size_t j = 0; j < 4; ++j) std::memcpy(d[j] + r, src + r * stride + j * 4, 4);
          continue;
        }
        __m128 r0 = _mm_loadu_ps(reinterpret_cast<const float*>(src + i * stride));
        __m128 r1 = _mm_loadu_ps(reinterpret_cast<const float*>(src + (i + 1) * stride));
        __m128 r2 = _mm_loadu_ps(reinterpret_cast<const float*>(src + (i + 2) * stride));
        __m128 r3 = _mm_loadu_ps(reinterpret_cast<const float*>(src + (i + 3) * stride));
        _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
        _mm_storeu_ps(d[0] + i, r0);
        _mm_storeu_ps(d[1] + i, r1);
        _mm_storeu_ps(d[2] + i, r2);
        _mm_storeu_ps(d[3] + i, r3);
      }
      for (; i < n; ++i)
        if (mark[i] != 0)
          for (std::size_t j = 0; j < 4; ++j) std::memcpy(d[j] + i, src + i * stride + j * 4, 4);
      k += 4;
      continue;
    }
#endif
    const ParquetRowField& f = fields[k++];
    for (std::size_t i = 0; i < n; ++i)
      if (mark[i] != 0) std::memcpy(f.dst + i * f.width, rows + i * stride + f.offset, f.width);
  }
}

}  // namespace sluice::io
