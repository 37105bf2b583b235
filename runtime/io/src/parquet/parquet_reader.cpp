// ParquetReader: global rows to (file, row group, row), decoded row groups
// kept in a small least-recently-used cache.
#include <algorithm>

#include "parquet/column_chunk.h"
#include "parquet/metadata.h"
#include "sluice/error.h"
#include "sluice/io/parquet.h"

namespace sluice::io {

struct ParquetDecoderState {
  explicit ParquetDecoderState(std::uint64_t max_bytes) : decoder(max_bytes) {}
  parquet::ChunkDecoder decoder;
};

struct ParquetReader::Group {
  std::size_t file = SIZE_MAX, group = SIZE_MAX;
  std::uint64_t used = 0;
  std::vector<parquet::ColumnValues> columns;
  std::vector<parquet::OutputType> types;
};

ParquetReader::ParquetReader(std::vector<std::shared_ptr<const ParquetFile>> files, std::vector<std::string> columns,
                             ParquetReaderOptions options)
    : files_(std::move(files)), names_(std::move(columns)), options_(options),
      state_(std::make_unique<ParquetDecoderState>(options.max_chunk_bytes)) {
  if (files_.empty()) throw Error("no Parquet file given");
  if (options_.cached_row_groups == 0) options_.cached_row_groups = 1;
  const ParquetFile& first = *files_[0];
  if (names_.empty())
    for (const ParquetColumnInfo& c : first.columns()) names_.push_back(c.name);
  for (const std::string& name : names_) {
    const int i = first.column(name);
    if (i < 0) {
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
  for (const auto& file : files_) {
    std::vector<int>& leaves = leaf_.emplace_back();
    for (std::size_t c = 0; c < names_.size(); ++c) {
      const int i = file->column(names_[c]);
      if (i < 0) throw Error(file->path() + ": no column '" + names_[c] + "' (" + first.path() + " has it)");
      const ParquetColumnInfo& info = file->columns()[static_cast<std::size_t>(i)];
      if (!info.unsupported.empty())
        throw Error(file->path() + ": column '" + names_[c] + "': " + info.unsupported + " are not supported");
      if (info.dtype != infos_[c].dtype || info.list != infos_[c].list)
        throw Error(file->path() + ": column '" + names_[c] + "' is " + info.physical + " " + info.logical + ", in " +
                    first.path() + " it is " + infos_[c].physical + " " + infos_[c].logical);
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
  const ParquetFile& f = *files_[file];
  g.columns.resize(names_.size());
  g.types.resize(names_.size());
  for (std::size_t c = 0; c < names_.size(); ++c) {
    const auto leaf = static_cast<std::size_t>(leaf_[file][c]);
    g.types[c] = parquet::output_type(f.meta().leaves[leaf]);
    try {
      state_->decoder.decode(f.meta(), f.bytes().data(), f.bytes().size(), group, leaf, g.columns[c]);
    } catch (const Error& e) {
      throw Error(f.path() + ": row group " + std::to_string(group) + ", column '" + names_[c] + "': " + e.what());
    }
  }
  g.file = file;
  g.group = group;
  g.used = ++tick_;
  ++decoded_;
  return g;
}

void ParquetReader::read(std::uint64_t row, std::span<ParquetValue> out) {
  const auto [file, in_file] = locate(row);
  const std::vector<std::uint64_t>& groups = group_starts_[file];
  const auto it = std::upper_bound(groups.begin(), groups.end(), in_file);
  const auto group = static_cast<std::size_t>(it - groups.begin()) - 1;
  const std::uint64_t r = in_file - groups[group];
  Group& g = load(file, group);
  const std::size_t n = std::min(out.size(), names_.size());
  for (std::size_t c = 0; c < n; ++c) {
    const parquet::ColumnValues& v = g.columns[c];
    if (g.types[c].variable) {
      out[c].data = v.data.data() + v.offsets[r];
      out[c].bytes = v.offsets[r + 1] - v.offsets[r];
    } else {
      out[c].data = v.data.data() + r * g.types[c].width;
      out[c].bytes = g.types[c].width;
    }
  }
}

}  // namespace sluice::io
