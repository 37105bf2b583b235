// ParquetFile: the mapping and its footer, described for people.
#include <algorithm>
#include <sstream>
#include <vector>

#include "file_util.h"
#include "parquet/column_chunk.h"
#include "parquet/metadata.h"
#include "sluice/error.h"
#include "sluice/io/parquet.h"

namespace sluice::io {

ParquetFile::ParquetFile(std::string path) : path_(std::move(path)) {
  detail::Fd fd = detail::open_read(path_);
  size_ = detail::file_size(fd.get(), path_);
  try {
    std::byte head[4] = {}, tail[8] = {};
    if (size_ >= 12) {
      detail::pread_full(fd.get(), head, 0, path_);
      detail::pread_full(fd.get(), tail, size_ - 8, path_);
    }
    const std::uint32_t length = parquet::footer_length(head, tail, size_);
    std::vector<std::byte> footer(length);
    if (detail::pread_full(fd.get(), footer, size_ - 8 - length, path_) != length)
      throw Error("the file ends inside its footer");
    try {
      meta_ = std::make_unique<parquet::FileMeta>(parquet::parse_footer(footer.data(), footer.size()));
    } catch (const Error& e) {
      const std::string why = e.what();  // "thrift: ..." says how the bytes do not decode
      if (why.rfind("thrift:", 0) != 0) throw;
      throw Error("the footer (the file's metadata, " + std::to_string(length) + " bytes before its last 8) is corrupt: " + why);
    }
  } catch (const Error& e) {
    throw Error(path_ + ": " + e.what());
  }
  for (const parquet::LeafColumn& leaf : meta_->leaves) {
    const parquet::OutputType type = parquet::output_type(leaf);
    ParquetColumnInfo info;
    info.name = leaf.name;
    info.physical = parquet::physical_name(leaf.physical);
    info.logical = parquet::logical_name(leaf);
    info.dtype = type.dtype;
    if (leaf.physical == parquet::Physical::fixed && leaf.type_length > 0)
      info.fixed_bytes = static_cast<std::size_t>(leaf.type_length);
    info.list = leaf.max_rep > 0;
    info.nullable = leaf.max_def > leaf.max_rep;
    info.unsupported = leaf.unsupported;
    columns_.push_back(std::move(info));
  }
}

ParquetFile::~ParquetFile() = default;

std::uint64_t ParquetFile::rows() const { return static_cast<std::uint64_t>(meta_->num_rows); }
const std::string& ParquetFile::created_by() const { return meta_->created_by; }

std::vector<ParquetRowGroupInfo> ParquetFile::row_groups() const {
  std::vector<ParquetRowGroupInfo> groups;
  for (const parquet::RowGroupMeta& g : meta_->row_groups) {
    ParquetRowGroupInfo info;
    info.rows = static_cast<std::uint64_t>(g.num_rows);
    for (const parquet::ChunkMeta& c : g.chunks) {
      info.compressed_bytes += static_cast<std::uint64_t>(std::max<std::int64_t>(c.total_compressed, 0));
      info.uncompressed_bytes += static_cast<std::uint64_t>(std::max<std::int64_t>(c.total_uncompressed, 0));
      info.codecs.push_back(parquet::codec_name(c.codec));
    }
    groups.push_back(std::move(info));
  }
  return groups;
}

int ParquetFile::column(std::string_view name) const {
  std::vector<std::size_t> found;
  for (std::size_t i = 0; i < columns_.size(); ++i)
    if (columns_[i].name == name || meta_->leaves[i].path == name) found.push_back(i);
  if (found.empty()) return -1;
  if (found.size() == 1) return static_cast<int>(found[0]);
  // The fields of a struct in a list all take the list's name: what they
  // lack is said first.
  for (const std::size_t i : found)
    if (!columns_[i].unsupported.empty()) return static_cast<int>(i);
  std::string which;
  for (const std::size_t i : found) {
    const parquet::LeafColumn& leaf = meta_->leaves[i];
    const std::string& own = meta_->schema[leaf.schema_index].name;
    which += (which.empty() ? "" : " and ") +
             (own == leaf.path ? "a column named '" + own + "'"
                               : "the field '" + own + "' of '" + leaf.path.substr(0, leaf.path.size() - own.size() - 1) + "'");
  }
  throw Error(path_ + ": the column name '" + std::string(name) + "' names " + which +
              "; Sluice cannot tell them apart, so it reads neither (leave the name out with columns = {...})");
}

std::string ParquetFile::describe() const {
  std::ostringstream s;
  s << path_ << ": Parquet, " << rows() << " rows in " << meta_->row_groups.size() << " row group"
    << (meta_->row_groups.size() == 1 ? "" : "s");
  if (!meta_->created_by.empty()) s << ", written by " << meta_->created_by;
  s << "\ncolumns:\n";
  for (std::size_t i = 0; i < columns_.size(); ++i) {
    const ParquetColumnInfo& c = columns_[i];
    s << "  " << c.name << ": " << c.type() << " -> "
      << (c.dtype ? std::string(dtype_name(*c.dtype)) : std::string("bytes"));
    if (c.list) s << ", list";
    if (c.nullable) {
      s << ", nullable";
      // The writer's statistics, where every row group has them: whether a
      // read will meet a null (a fixed field refuses one, a list's element too).
      std::int64_t nulls = 0;
      for (const parquet::RowGroupMeta& g : meta_->row_groups)
        nulls = nulls < 0 || g.chunks[i].null_count < 0 ? -1 : nulls + g.chunks[i].null_count;
      if (nulls == 0) s << " (no nulls, by the writer's statistics)";
      else if (nulls > 0)
        s << " (" << nulls << (nulls == 1 ? " null" : " nulls")
          << (c.list ? " or empty lists by the writer's statistics, which do not tell them apart: a null or empty "
                       "list reads as empty, a list with a null element is refused"
                     : " by the writer's statistics")
          << ")";
    }
    if (!c.unsupported.empty()) s << "  [not readable: " << c.unsupported << "]";
    s << "\n";
  }
  s << "row groups:\n";
  const std::vector<ParquetRowGroupInfo> groups = row_groups();
  for (std::size_t g = 0; g < groups.size(); ++g) {
    s << "  " << g << ": " << groups[g].rows << " rows, " << groups[g].compressed_bytes << " bytes compressed, "
      << groups[g].uncompressed_bytes << " uncompressed";
    std::vector<std::string> codecs;
    for (const std::string& c : groups[g].codecs)
      if (std::find(codecs.begin(), codecs.end(), c) == codecs.end()) codecs.push_back(c);
    for (std::size_t i = 0; i < codecs.size(); ++i) s << (i == 0 ? ", " : "+") << codecs[i];
    s << "\n";
  }
  return s.str();
}

}  // namespace sluice::io
