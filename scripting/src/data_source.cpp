#include "data_source.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "sluice/error.h"
#include "sluice/io/file_source.h"
#include "sluice/io/glob.h"
#include "sluice/io/jsonl.h"
#include "sluice/io/tar.h"
#include "sluice/io/tar_stream.h"
#include "sluice/io/tfrecord.h"
#include "sluice/io/tfrecord_stream.h"
#include "sluice/remote/cache.h"
#include "sluice/remote/s3_listing.h"
#include "sluice/remote/url.h"

namespace sluice::scripting {
namespace {

bool has_wildcard(const std::string& path) {
  return path.find_first_of("*?[") != std::string::npos;
}

// Every entry, with patterns expanded (each must match at least one file).
std::vector<std::string> expand(const std::string& what, const std::vector<std::string>& entries) {
  std::vector<std::string> paths;
  for (const std::string& entry : entries) {
    if (!has_wildcard(entry)) {
      paths.push_back(entry);
      continue;
    }
    std::vector<std::string> matched = io::glob(entry);
    if (matched.empty()) throw Error(what + ": no file matches " + entry);
    paths.insert(paths.end(), matched.begin(), matched.end());
  }
  if (paths.empty()) throw Error(what + ": the list of files is empty");
  return paths;
}

std::uint64_t file_size_or_zero(const std::string& path) {
  struct stat st{};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<std::uint64_t>(st.st_size) : 0;
}

bool is_gzip(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;  // reported with its reason when the shard is opened
  unsigned char magic[2] = {0, 0};
  const bool gzip = ::read(fd, magic, 2) == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
  ::close(fd);
  return gzip;
}

}  // namespace

remote::CacheOptions remote_cache_options() {
  remote::CacheOptions options;
  options.dir = remote::default_cache_dir();
  if (const char* limit = std::getenv("SLUICE_CACHE_LIMIT"); limit && *limit) {
    char* end = nullptr;
    errno = 0;
    options.limit = std::strtoull(limit, &end, 10);
    if (errno != 0 || *end != '\0' || limit[0] == '-')
      throw Error(std::string("SLUICE_CACHE_LIMIT expects a count of bytes, got '") + limit + "'");
  }
  return options;
}

std::shared_ptr<const DataSource> DataSource::open(const SourceSpec& spec, OnError on_error, std::uint64_t seed,
                                                   const remote::CacheOptions& cache) {
  std::shared_ptr<DataSource> source(new DataSource());
  source->spec_ = spec;
  source->on_error_ = on_error;
  source->seed_ = seed;
  const std::string what = "sluice." + spec.kind;
  try {
    source->fetch_remote(cache);
    if (spec.kind == "files" || spec.kind == "folders") source->open_files();
    else if (spec.kind == "tfrecord") source->open_tfrecord();
    else if (spec.kind == "tar") source->open_tar();
    else if (spec.kind == "jsonl") source->open_jsonl();
    else if (spec.kind == "npy") source->open_npy();
    else if (spec.kind == "parquet") source->open_parquet();
    else throw Error("unknown source kind '" + spec.kind + "'");
  } catch (const Error& e) {
    throw Error(what + ": " + e.what());
  }
  if (source->size_ == 0) throw Error(what + ": the data set holds no samples");
  return source;
}

void DataSource::open_files() {
  std::shared_ptr<io::FileSource> files;
  if (spec_.kind == "folders") {
    files = io::FileSource::from_folders(spec_.paths.at(0), {.extensions = spec_.extensions});
  } else {
    files = io::FileSource::from_list(expand("sluice.files", spec_.paths));
  }
  size_ = files->size();
  records_ = std::move(files);
}

// Remote entries (s3://, http(s)://, with brace ranges and S3 globs) become
// the cached copies of their objects, downloaded first where the node cache
// (remote/cache.h) lacks them; the readers then open local files.
void DataSource::fetch_remote(const remote::CacheOptions& options) {
  if (std::none_of(spec_.paths.begin(), spec_.paths.end(), [](const std::string& p) { return remote::is_remote(p); }))
    return;
  if (spec_.kind == "folders") throw Error("a folder tree cannot be remote; name the files: sluice.files{ \"s3://...\" }");
  std::vector<std::string> urls;
  std::vector<std::string> local;
  std::vector<std::size_t> at;  // where each URL goes in `local`
  for (const std::string& entry : spec_.paths) {
    if (!remote::is_remote(entry)) {
      local.push_back(entry);
      continue;
    }
    // npy pairs each path with a field name: one object each, no expansion.
    const std::vector<std::string> names =
        spec_.kind == "npy" ? std::vector<std::string>{entry} : remote::expand_remote(entry, options.transfer);
    for (const std::string& url : names) {
      at.push_back(local.size());
      local.emplace_back();
      urls.push_back(url);
    }
  }
  remote::Cache cache(options);
  const std::vector<std::string> paths = cache.get_all(urls);
  for (std::size_t i = 0; i < urls.size(); ++i) local[at[i]] = paths[i];
  // The readers open the files by name; the pins would not survive into the
  // workers, so a budget shared with other jobs may evict a shard mid-run.
  for (const std::string& url : urls) cache.release(url);
  spec_.paths = std::move(local);
  if (options.limit > 0) {
    std::uint64_t total = 0;
    for (const std::string& path : paths) total += file_size_or_zero(path);
    if (total > options.limit)
      notes_.push_back("sluice." + spec_.kind + ": the remote objects (" + std::to_string(total) +
                       " bytes) pass cache_limit_mb (" + std::to_string(options.limit >> 20) +
                       " MiB): all are fetched when the source opens and held for the run, so the cache holds "
                       "more than its budget until the run ends");
  }
  remote_ = cache.stats();
}

std::string DataSource::origin(std::uint64_t id) const {
  if (id >= size_) return "";
  if (mode_ == Mode::npy) return columns_.empty() ? "" : columns_[0].array.path() + " row " + std::to_string(id);
  if (mode_ == Mode::parquet) {
    const auto [file, row] = origin_reader_->locate(id);
    return parquet_files_[file]->path() + " row " + std::to_string(row);
  }
  if (mode_ != Mode::indexed) return "";
  if (const auto* jsonl = dynamic_cast<const io::JsonlSource*>(records_.get())) return jsonl->where(id);
  const io::SampleLocation where = records_->locate(id);
  const std::string& file = records_->files().at(where.file);
  return where.whole_file ? file : file + " at byte " + std::to_string(where.offset);
}

std::vector<std::uint64_t> DataSource::shard_sizes() const {
  if (mode_ != Mode::indexed) return {};
  std::vector<std::uint64_t> sizes(records_->files().size(), 0);
  for (std::uint64_t id = 0; id < size_; ++id) ++sizes[records_->locate(id).file];
  return sizes;
}

std::vector<std::string> DataSource::classes() const {
  const auto* files = dynamic_cast<const io::FileSource*>(records_.get());
  return files ? files->classes() : std::vector<std::string>{};
}

std::int64_t DataSource::label(std::uint64_t id) const {
  const auto* files = dynamic_cast<const io::FileSource*>(records_.get());
  return files && id < size_ ? files->label(id) : -1;
}

void DataSource::open_tfrecord() {
  shards_ = expand("sluice.tfrecord", spec_.paths);
  if (spec_.index == 0) return count_stream();
  io::TFRecordOptions options;
  options.verify_crc = spec_.verify_crc;
  options.index_dir = spec_.index_dir;
  options.on_error = on_error_;
  auto source = std::make_shared<io::TFRecordSource>(shards_, options);
  for (const io::SkippedSample& s : source->index_skips().entries())
    notes_.push_back("on_error = \"skip\": " + s.reason + "; the shard is read up to there");
  size_ = source->size();
  records_ = std::move(source);
}

void DataSource::open_tar() {
  shards_ = expand("sluice.tar", spec_.paths);
  const auto gzip = std::find_if(shards_.begin(), shards_.end(), is_gzip);
  if (spec_.index == 1 && gzip != shards_.end())
    throw Error(*gzip + " is gzip-compressed and cannot be read at random offsets; "
                "leave `index` out or set index = false to stream it");
  if (spec_.index == 0 || gzip != shards_.end()) return count_stream();
  auto source = std::make_shared<io::TarSource>(shards_, io::TarOptions{.on_error = on_error_});
  for (const io::SkippedSample& s : source->index_skips().entries())
    notes_.push_back("on_error = \"skip\": " + s.reason + "; the shard is read up to there");
  size_ = source->size();
  records_ = std::move(source);
}

void DataSource::open_jsonl() {
  io::JsonlOptions options;
  options.field = spec_.field;
  options.index_dir = spec_.index_dir;
  options.on_error = on_error_;
  auto source = std::make_shared<io::JsonlSource>(expand("sluice.jsonl", spec_.paths), options);
  for (const io::SkippedSample& s : source->index_skips().entries())
    notes_.push_back("on_error = \"skip\": " + s.reason + "; the file is read up to its last whole line there");
  size_ = source->size();
  records_ = std::move(source);
}

void DataSource::open_npy() {
  std::uint64_t rows = 0;
  for (std::size_t i = 0; i < spec_.paths.size(); ++i) {
    const std::string member = i < spec_.members.size() ? spec_.members[i] : "";
    io::NpyArray array = member.empty() ? io::NpyArray(spec_.paths[i]) : io::NpyArray(spec_.paths[i], member);
    if (i > 0 && array.rows() != rows)
      throw Error(spec_.paths[i] + " has " + std::to_string(array.rows()) + " rows, " + spec_.paths[0] +
                  " has " + std::to_string(rows) + "; every array needs the same first dimension");
    rows = array.rows();
    columns_.push_back({spec_.names.at(i), std::move(array)});
  }
  mode_ = Mode::npy;
  size_ = rows;
}

void DataSource::open_parquet() {
  for (const std::string& path : expand("sluice.parquet", spec_.paths))
    parquet_files_.push_back(std::make_shared<const io::ParquetFile>(path));
  // Checks every file has the columns, with the same types, and counts rows.
  origin_reader_ = parquet_reader();
  parquet_columns_ = origin_reader_->column_names();
  mode_ = Mode::parquet;
  size_ = origin_reader_->rows();
}

std::unique_ptr<io::ParquetReader> DataSource::parquet_reader() const {
  io::ParquetReaderOptions options;
  if (spec_.row_groups > 0) options.cached_row_groups = spec_.row_groups;
  return std::make_unique<io::ParquetReader>(parquet_files_,
                                             parquet_columns_.empty() ? spec_.names : parquet_columns_, options);
}

// Streaming: the data set's size is given, or counted in one pass.
void DataSource::count_stream() {
  mode_ = Mode::stream;
  if (spec_.size > 0) {
    size_ = spec_.size;
    return;
  }
  if (spec_.kind == "tfrecord") {
    for (const std::string& shard : shards_) {
      io::SkipLog skips;
      size_ += io::scan_tfrecord(shard, on_error_, &skips).records();
      for (const io::SkippedSample& s : skips.entries())
        notes_.push_back("on_error = \"skip\": " + s.reason + "; the shard is read up to there");
    }
  } else {
    std::unique_ptr<io::RecordStream> all = stream(0, 1, on_error_);
    io::Sample sample;
    while (all->next(sample)) ++size_;
    for (const io::SkippedSample& s : all->skips().entries())
      notes_.push_back("on_error = \"skip\": " + s.reason);
  }
  notes_.push_back("sluice." + spec_.kind + ": counted " + std::to_string(size_) + " records in " +
                   std::to_string(shards_.size()) + " shard" + (shards_.size() == 1 ? "" : "s") +
                   " (streaming); give size = " + std::to_string(size_) + " to skip that pass");
}

std::unique_ptr<io::RecordStream> DataSource::stream(std::uint32_t part, std::uint32_t parts,
                                                     OnError on_error) const {
  io::StreamOptions options;
  options.seed = seed_;
  options.shuffle_shards = spec_.shuffle_shards;
  options.shuffle_buffer = spec_.shuffle_buffer;
  options.shard_index = part;
  options.shard_count = parts;
  options.on_error = on_error;
  options.verify_crc = spec_.verify_crc;
  if (spec_.kind == "tfrecord") return std::make_unique<io::TFRecordStream>(shards_, options);
  return std::make_unique<io::TarStream>(shards_, options);
}

}  // namespace sluice::scripting
