#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "file_util.h"
#include "jsonl_format.h"
#include "jsonl_index.h"
#include "sluice/error.h"
#include "sluice/io/jsonl.h"

namespace sluice::io {
namespace {

std::vector<std::string> split_path(const std::string& field) {
  std::vector<std::string> path;
  std::size_t start = 0;
  for (;;) {
    const std::size_t dot = field.find('.', start);
    path.push_back(field.substr(start, dot - start));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return path;
}

}  // namespace

JsonlSource::JsonlSource(std::vector<std::string> files, JsonlOptions options)
    : files_(std::move(files)), options_(std::move(options)), path_(split_path(options_.field)) {
  starts_.push_back(0);
  for (const std::string& file : files_) {
    const detail::Compression compression = detail::sniff_compression(file);
    const std::string index_path = detail::sidecar_path(file, options_.index_dir, ".idx");
    std::string plain = file;
    std::optional<JsonlIndex> index;
    if (compression == detail::Compression::none) {
      index = load_jsonl_index(index_path, file);
      if (!index) {
        index = scan_jsonl(file);
        if (options_.write_index) {
          try {
            write_jsonl_index(index_path, *index);
          } catch (const Error& e) {
            unsaved_indexes_.push_back(e.what());  // the index stays in memory for this run
          }
        }
      }
    } else {
      plain = detail::sidecar_path(file, options_.index_dir, ".plain");
      if (detail::not_older(plain, file)) index = load_jsonl_index(index_path, plain, file);
      if (!index) {
        // The compressed file as it is before it is read: changed meanwhile, it is read again next time.
        struct stat source {};
        if (::stat(file.c_str(), &source) != 0) throw Error(file + ": " + std::strerror(errno));
        detail::DecompressedCopy copy;
        try {
          copy = detail::decompress_jsonl(file, compression, plain, options_.on_error);
        } catch (const Error& e) {
          const std::string what = e.what();
          if (what.rfind(file + ":", 0) == 0) throw;  // damage, named by file
          throw Error(what + " (a compressed file is decompressed once into FILE.plain for random access; "
                      "give index_dir = a writable folder)");
        }
        plain = copy.copy_path;
        index = std::move(copy.index);
        index->text_mtime_ns = detail::mtime_ns(plain);  // the copy's, now it is in place
        index->source_size = static_cast<std::uint64_t>(source.st_size);
        index->source_mtime_ns = detail::mtime_ns(source);
        if (!copy.damage.empty()) {
          index_skips_.add(starts_.back() + index->records(), copy.damage);
        } else if (options_.write_index) {
          try {
            write_jsonl_index(index_path, *index);
          } catch (const Error& e) {
            unsaved_indexes_.push_back(e.what());  // the copy is made again next time
          }
        }
      }
    }
    plain_.push_back(plain);
    starts_.push_back(starts_.back() + index->records());
    indexes_.push_back(std::move(*index));
  }
}

SampleLocation JsonlSource::locate(std::uint64_t id) const {
  auto it = std::upper_bound(starts_.begin(), starts_.end(), id);
  const auto file = static_cast<std::size_t>(it - starts_.begin() - 1);
  const std::uint64_t r = id - starts_[file];
  SampleLocation where;
  where.id = id;
  where.file = static_cast<std::uint32_t>(file);
  where.offset = indexes_[file].offsets[r];
  where.length = indexes_[file].lengths[r];
  return where;
}

std::string JsonlSource::where(std::uint64_t id) const {
  const SampleLocation at = locate(id);
  return files_[at.file] + ": line " + std::to_string(indexes_[at.file].lines[id - starts_[at.file]]);
}

void JsonlSource::decode(const SampleLocation& where, std::span<const std::byte> raw, Sample& out) const {
  const std::uint64_t record = where.id - starts_[where.file];
  out.reset(where.id, files_[where.file], {}, -1, record, where.offset);
  if (raw.size() != where.length)  // not the line's fault: an Error, not a RecordError
    throw Error(this->where(where.id) + ": read " + std::to_string(raw.size()) + " bytes where the index says " +
                std::to_string(where.length) + "; the file changed since it was indexed");
  // A byte-order mark (Windows tools, Python's utf-8-sig) before the first
  // line is not part of it.
  if (where.offset == 0 && raw.size() >= detail::kUtf8BomSize &&
      std::memcmp(raw.data(), detail::kUtf8Bom, detail::kUtf8BomSize) == 0)
    raw = raw.subspan(detail::kUtf8BomSize);
  try {
    detail::parse_jsonl_line(raw, options_.field, path_, out, options_.field_is_text);
  } catch (const Error& e) {
    out.fields.clear();
    throw RecordError(this->where(where.id) + ": " + e.what());
  }
}

}  // namespace sluice::io
