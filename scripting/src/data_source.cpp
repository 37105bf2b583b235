#include "data_source.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <utility>

#include "sluice/error.h"
#include "sluice/record.h"
#include "sluice/io/file_source.h"
#include "sluice/io/atomic_file.h"
#include "sluice/io/glob.h"
#include "sluice/io/jsonl.h"
#include "sluice/io/manifest.h"
#include "sluice/io/tar.h"
#include "sluice/io/tar_stream.h"
#include "sluice/io/tfrecord.h"
#include "sluice/io/tfrecord_stream.h"
#include "sluice/remote/cache.h"
#include "sluice/remote/s3_listing.h"
#include "sluice/remote/transfer.h"
#include "sluice/remote/url.h"
#include "sluice/text/token_cache.h"
#include "sluice/text/tokenizer.h"
#include "remote_manifest.h"

namespace sluice::scripting {
namespace {

bool has_wildcard(const std::string& path) {
  return path.find_first_of("*?[") != std::string::npos;
}

// A {...} holding ".." or ",": a brace range or list to expand.
bool has_brace_range(const std::string& path) {
  for (std::size_t open = path.find('{'); open != std::string::npos; open = path.find('{', open + 1)) {
    const std::size_t close = path.find('}', open);
    if (close == std::string::npos) return false;
    const std::string_view body(path.data() + open + 1, close - open - 1);
    if (body.find("..") != std::string_view::npos || body.find(',') != std::string_view::npos) return true;
  }
  return false;
}

// The length of the file `path` is a sidecar of, when its name is one Sluice
// writes beside a data file (FILE.idx, FILE.plain, FILE.plain.cut, and their
// temporaries FILE.plain.partPID, FILE.idx.tmpPID.N, FILE.tmpPID.N, and
// FILE.plain.partPID.tmpPID.N while another process writes it); else npos.
std::size_t sidecar_stem(std::string_view path) {
  const std::size_t slash = path.rfind('/');
  const std::string_view name = path.substr(slash == std::string_view::npos ? 0 : slash + 1);
  auto digits_from = [&](std::size_t at) {  // the name ends in [0-9.]* from `at`
    return name.find_first_not_of("0123456789.", at) == std::string_view::npos;
  };
  std::size_t stem = std::string_view::npos;
  if (name.ends_with(".plain.cut")) stem = name.size() - 10;
  else if (name.ends_with(".plain")) stem = name.size() - 6;
  else if (name.ends_with(".idx")) stem = name.size() - 4;
  else if (const std::size_t at = name.rfind(".plain.part"); at != std::string_view::npos && digits_from(at + 11)) stem = at;
  else if (const std::size_t tmp = name.rfind(".tmp");
           tmp != std::string_view::npos && io::is_atomic_temporary(name, name.substr(0, tmp))) {
    stem = tmp;
    // The temporary of a sidecar: of FILE.idx, of FILE.plain.partPID.
    if (const std::size_t inner = sidecar_stem(path.substr(0, path.size() - name.size() + stem));
        inner != std::string_view::npos)
      return inner;
  }
  if (stem == std::string_view::npos || stem == 0) return std::string::npos;
  return path.size() - name.size() + stem;
}

// Leaves out of a pattern's matches the sidecars of files it also matched.
void drop_sidecars(std::vector<std::string>& matched) {
  std::vector<std::string> all = matched;
  std::sort(all.begin(), all.end());
  std::erase_if(matched, [&](const std::string& path) {
    const std::size_t stem = sidecar_stem(path);
    return stem != std::string::npos && std::binary_search(all.begin(), all.end(), path.substr(0, stem));
  });
}

// Every entry, with patterns expanded (each must match at least one file).
// A pattern leaves out the sidecars Sluice wrote beside the files it matches
// (sidecar_stem): `data/*` is the data, on the first run and the next ones.
std::vector<std::string> expand(const std::string& what, const std::vector<std::string>& entries) {
  std::vector<std::string> paths;
  for (const std::string& given : entries) {
    // WebDataset's brace ranges and lists (shards/train-{000000..000127}.tar,
    // {a,b}), as for remote paths; a file whose name holds braces, or a brace
    // without .. or , in it ({raw}), is taken as it is.
    struct stat st{};
    std::vector<std::string> entries{given};
    if (has_brace_range(given) && ::stat(given.c_str(), &st) != 0) {
      try {
        entries = remote::expand_braces(given);
      } catch (const Error& e) {
        throw Error(what + ": " + e.what());
      }
    }
    for (const std::string& entry : entries) {
      if (!has_wildcard(entry)) {
        paths.push_back(entry);
        continue;
      }
      std::vector<std::string> matched = io::glob(entry);
      if (matched.empty()) throw Error(what + ": no file matches " + entry);
      drop_sidecars(matched);
      paths.insert(paths.end(), matched.begin(), matched.end());
    }
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

namespace {
constexpr std::string_view kLeftOut = "on_error = \"skip\": ";
}  // namespace

std::string left_out_note(const std::string& what) { return std::string(kLeftOut) + what; }
bool is_left_out_note(std::string_view note) { return note.starts_with(kLeftOut); }

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
  source->cache_ = cache;
  const std::string what = "sluice." + spec.kind;
  try {
    source->fetch_remote(source->spec_, cache);
    if (spec.kind == "files" || spec.kind == "folders") source->open_files();
    else if (spec.kind == "tfrecord") source->open_tfrecord();
    else if (spec.kind == "tar") source->open_tar();
    else if (spec.kind == "jsonl") source->open_jsonl();
    else if (spec.kind == "npy") source->open_npy();
    else if (spec.kind == "parquet") source->open_parquet();
    else if (spec.kind == "tokens") source->open_tokens();
    else if (spec.kind == "mix") source->open_mix();
    else throw Error("unknown source kind '" + spec.kind + "'");
  } catch (const Error& e) {
    throw Error(what + ": " + source->named(e.what()));
  }
  if (source->size_ == 0) {
    std::string given;  // what the pipeline named (its first few)
    for (std::size_t i = 0; i < std::min<std::size_t>(spec.paths.size(), 3); ++i)
      given += (i > 0 ? ", " : "") + spec.paths[i];
    if (spec.paths.size() > 3) given += " and " + std::to_string(spec.paths.size() - 3) + " more";
    std::string why;  // what on_error = "skip" left out, say
    for (const std::string& note : source->notes_) why += "\n  " + source->named(note);
    throw Error(what + ": the data set holds no samples (" + (given.empty() ? "no input given" : given) + ")" + why);
  }
  return source;
}

std::string DataSource::named(std::string message) const {
  // A copy's path whole, not the start of a file beside it (NAME.partial,
  // NAME.lock: a local file whose errors must keep naming it).
  auto whole = [&](std::size_t end) {
    return end == message.size() || std::string_view(":;,) '\"\n").find(message[end]) != std::string_view::npos;
  };
  for (const auto& [path, url] : urls_) {
    for (std::size_t at = message.find(path); at != std::string::npos;) {
      if (!whole(at + path.size())) {
        at = message.find(path, at + path.size());
        continue;
      }
      message.replace(at, path.size(), url);
      at = message.find(path, at + url.size());
    }
  }
  return message;
}

const std::string* DataSource::url_of(std::string_view path) const {
  if (urls_.empty()) return nullptr;
  const auto it = urls_.find(path);
  return it == urls_.end() ? nullptr : &it->second;
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

namespace {

// Token files over URLs as Megatron-LM datasets, found as locally
// (text/token_file.h): a URL ending in .idx; one ending in .bin, or a
// prefix without an extension, whose PREFIX.idx the store has. Returns a
// {bin, idx} pair a name, idx "" for a flat file. The indexes are asked for
// with HEAD, all at once; any 4xx means none there (S3 answers a missing
// key with 403 to credentials that may not list the bucket).
std::vector<std::pair<std::string, std::string>> megatron_urls(const std::vector<std::string>& names,
                                                               const remote::TransferOptions& transfer) {
  std::vector<std::pair<std::string, std::string>> out;
  std::vector<std::size_t> probed;     // the names whose PREFIX.idx is asked for
  std::vector<remote::Request> heads;  // theirs
  for (const std::string& url : names) {
    if (url.ends_with(".idx")) {
      out.emplace_back(url.substr(0, url.size() - 4) + ".bin", url);
      continue;
    }
    out.emplace_back(url, "");
    const std::string last = url.substr(url.rfind('/') + 1);
    if (!url.ends_with(".bin") && last.find('.') != std::string::npos) continue;
    probed.push_back(out.size() - 1);
    heads.push_back({.url = (url.ends_with(".bin") ? url.substr(0, url.size() - 4) : url) + ".idx", .head = true});
  }
  const std::vector<remote::Response> answers = remote::fetch_all(heads, transfer);
  for (std::size_t i = 0; i < answers.size(); ++i) {
    const remote::Response& r = answers[i];
    if (r.ok()) {
      const std::string& idx = heads[i].url;
      out[probed[i]] = {idx.substr(0, idx.size() - 4) + ".bin", idx};
    } else if (r.status < 400 || r.status >= 500) {
      throw Error(r.error + " (asking whether a Megatron-LM index lies beside the token file)");
    }
  }
  return out;
}

}  // namespace

// Remote entries (s3://, http(s)://, with brace ranges and S3 globs) of
// `spec` (the source's own, or a mixture's part) become the cached copies of
// their objects, downloaded first where the node cache (remote/cache.h) lacks
// them; the readers then open local files.
void DataSource::fetch_remote(SourceSpec& spec, const remote::CacheOptions& given) {
  if (std::none_of(spec.paths.begin(), spec.paths.end(), [](const std::string& p) { return remote::is_remote(p); }))
    return;
  if (spec.kind == "folders") throw Error("a folder tree cannot be remote; name the files: sluice.files{ \"s3://...\" }");
  std::vector<std::string> urls;
  std::vector<std::string> local;
  std::vector<std::size_t> at;  // where each URL goes in `local`
  std::vector<std::pair<std::size_t, std::size_t>> indexes;  // tokens: (local entry, its Megatron index's URL in urls)
  for (const std::string& entry : spec.paths) {
    if (!remote::is_remote(entry)) {
      local.push_back(entry);
      continue;
    }
    // npy pairs each path with a field name: one object each, no expansion.
    std::vector<std::string> names =
        spec.kind == "npy" ? std::vector<std::string>{entry} : remote::expand_remote(entry, given.transfer);
    if (names.size() > 1) drop_sidecars(names);  // a listing's (sluice.write uploads FILE.idx beside FILE)
    std::vector<std::pair<std::string, std::string>> objects;  // {URL, its Megatron index's URL or ""}
    if (spec.kind == "tokens") {
      objects = megatron_urls(names, given.transfer);
    } else {
      for (const std::string& name : names) objects.emplace_back(name, "");
    }
    for (const auto& [url, idx] : objects) {
      at.push_back(local.size());
      local.emplace_back();
      urls.push_back(url);
      if (idx.empty()) continue;
      indexes.emplace_back(local.size() - 1, urls.size());
      urls.push_back(idx);
      at.push_back(SIZE_MAX);  // not an entry of its own
    }
  }
  // A written dataset's shards are checked against its manifest as they are
  // downloaded, here and by the workers (their caches copy these options).
  remote::CacheOptions options = given;
  options.check = remote_manifest_check(urls, options.transfer);
  if (at.size() == local.size() && &spec == &spec_ && open_lazily(urls, options)) {
    const remote::Cache cache(options);
    spec.paths.clear();
    for (const std::string& url : urls) {
      spec.paths.push_back(cache.path_of(url));
      urls_[spec.paths.back()] = url;
    }
    return;
  }
  remote::Cache cache(options);
  const std::vector<std::string> paths = cache.get_all(urls);
  for (std::size_t i = 0; i < urls.size(); ++i) {
    if (at[i] != SIZE_MAX) local[at[i]] = paths[i];
    urls_[paths[i]] = urls[i];
  }
  if (!indexes.empty()) spec.megatron_idx.assign(local.size(), "");
  for (const auto& [entry, url] : indexes) spec.megatron_idx[entry] = paths[url];
  // The run's objects stay pinned while this DataSource lives: the Script
  // (ScriptProducer) of the launching process holds it until the Loader ends,
  // and workers hold forked copies of it for no longer than they live. So an
  // evictor of another run sharing the directory skips them for the whole
  // run (cache.h, Pins: what fork does to a pin).
  pins_.push_back(std::make_shared<remote::Pins>(cache.hand_over_pins()));
  spec.paths = std::move(local);
  if (options.limit > 0) {
    std::uint64_t total = 0;
    for (const std::string& path : paths) total += file_size_or_zero(path);
    if (total > options.limit)
      notes_.push_back("sluice." + spec.kind + ": the remote objects (" + std::to_string(total) +
                       " bytes) pass cache_limit_mb (" + std::to_string(options.limit >> 20) +
                       " MiB): all are fetched when the source opens and pinned for the run, so the cache holds "
                       "more than its budget until the run ends");
    else if (cache.stats().over_budget > 0)
      notes_.push_back("sluice." + spec.kind + ": the node cache holds " +
                       std::to_string(options.limit + cache.stats().over_budget) +
                       " bytes, past cache_limit_mb (" + std::to_string(options.limit >> 20) +
                       " MiB): the rest is pinned by runs on this node that have not ended (a run's objects stay "
                       "until it ends)");
  }
  add_remote_stats(cache.stats());
}

// Indexed TFRecord or uncompressed tar whose every shard has its index
// published beside it in the store (URL.idx: the sidecar of tfrecord.h or
// tar_index.h, as `sluice index` and `sluice write` write them): only the
// indexes are fetched here, and objects already whole in the cache
// revalidated (one HEAD each, a changed one downloaded again); the workers
// fetch the shards themselves, by the plan's order (record_feed.h). Nothing
// stays pinned by the launching process. False, with a note saying why, when
// some index is missing: then every shard is fetched here.
bool DataSource::open_lazily(const std::vector<std::string>& urls, const remote::CacheOptions& options) {
  const bool tar = spec_.kind == "tar";
  if ((spec_.kind != "tfrecord" && !tar) || spec_.index == 0) return false;
  auto gzip_name = [](const std::string& url) { return url.ends_with(".gz") || url.ends_with(".tgz"); };
  if (tar && std::any_of(urls.begin(), urls.end(), gzip_name)) return false;  // streamed: no index
  const std::string what = "sluice." + spec_.kind;
  // Small objects, one request latency each: more of them in flight than a
  // shard download keeps (a store takes thousands at once).
  remote::CacheOptions small = options;
  small.transfer.max_in_flight = std::max(small.transfer.max_in_flight, 32u);
  remote::Cache cache(small);
  std::vector<std::string> idx;
  for (const std::string& url : urls) idx.push_back(url + ".idx");
  std::vector<std::string> paths;
  const std::string why_not_lazy =
      "; so every shard is downloaded when the source opens. Publish each shard's index beside it (URL.idx, as "
      "`sluice index` writes it) to have the workers fetch the shards as the plan needs them";
  auto fall_back = [&](const std::string& why) {
    notes_.push_back(what + ": " + why + why_not_lazy);
    add_remote_stats(cache.stats());
    return false;
  };
  // The first shard's alone first: a data set published without indexes
  // costs one refused request, not one a shard, and that probe is left out
  // of the run's remote counts (it fetched nothing of the data set).
  try {
    paths = cache.get_all({idx[0]});
  } catch (const Error& e) {
    notes_.push_back(what + ": no index beside the shards (" + e.what() + ")" + why_not_lazy);
    return false;
  }
  try {
    if (idx.size() > 1) {
      const std::vector<std::string> rest = cache.get_all(std::vector<std::string>(idx.begin() + 1, idx.end()));
      paths.insert(paths.end(), rest.begin(), rest.end());
    }
  } catch (const Error& e) {
    return fall_back(std::string("no index beside every shard (") + e.what() + ")");
  }
  // Each shard's size, from its index; the indexes are kept
  // for open_tfrecord or open_tar. A corrupt tar index is an error naming it.
  std::vector<std::uint64_t> sizes;
  lazy_indexes_.clear();
  lazy_tar_indexes_.clear();
  for (std::size_t i = 0; i < urls.size(); ++i) {
    if (tar) {
      io::TarIndex& index = lazy_tar_indexes_.emplace_back(io::read_tar_index(paths[i], idx[i]));
      sizes.push_back(index.shard_bytes);
    } else {
      std::optional<io::TFRecordIndex> index = io::read_tfrecord_index(paths[i]);
      if (!index) return fall_back(idx[i] + " is not a TFRecord index (lines of \"offset size\")");
      sizes.push_back(index->offsets.back());
      lazy_indexes_.push_back(std::move(*index));
    }
  }
  // A tar shard is checked against its published index before it is kept
  // in the cache: the index names the samples' keys and fields, so one left
  // from before the shard was rewritten at the same size would give keys
  // that are not its samples'. (A TFRecord's offsets are checked by its
  // records' length CRCs as they are read.)
  remote::CacheOptions checked = options;
  if (tar) {
    auto indexes = std::make_shared<std::map<std::string, io::TarIndex>>();
    for (std::size_t i = 0; i < urls.size(); ++i) (*indexes)[urls[i]] = lazy_tar_indexes_[i];
    checked.check = [indexes, given = options.check](const std::string& url, const std::string& path) {
      if (given) {
        if (std::string why = given(url, path); !why.empty()) return why;
      }
      const auto it = indexes->find(url);
      if (it == indexes->end()) return std::string();
      try {
        const std::string why = io::tar_index_mismatch(it->second, io::scan_tar(path));
        return why.empty() ? why : url + ".idx does not describe the shard (" + why + "): publish its index again (sluice index)";
      } catch (const Error& e) {
        return std::string(e.what());
      }
    };
  }
  remote::Cache data(checked);
  std::vector<std::string> present, now;
  for (const std::string& url : urls)
    if (file_size_or_zero(cache.path_of(url)) > 0) present.push_back(url);
  now = present;  // revalidated; a changed object is fetched again here
  // (The trial's sample 0 is read with a ranged GET: RecordFeed.)
  data.get_all(now);
  add_remote_stats(cache.stats());
  add_remote_stats(data.stats());
  auto lazy = std::make_shared<LazyRemote>();
  lazy->cache = checked;
  lazy->cache.revalidate = false;
  lazy->urls = urls;
  lazy->present = now.size();
  lazy->sizes = std::move(sizes);
  lazy_ = std::move(lazy);
  notes_.push_back(what + ": " + std::to_string(urls.size()) + " remote shards, " +
                   std::to_string(present.size()) + " already in the node cache; the workers fetch the others "
                   "as the plan needs them, up to remote_prefetch_mb ahead");
  return true;
}

void DataSource::add_remote_stats(const remote::CacheStats& r) { remote::add_stats(remote_, r); }

std::string DataSource::origin(std::uint64_t id) const {
  if (id >= size_) return "";
  if (mode_ == Mode::npy) return columns_.empty() ? "" : columns_[0].array.path() + " row " + std::to_string(id);
  if (mode_ == Mode::parquet) {
    const auto [file, row] = origin_reader_->locate(id);
    return parquet_files_[file]->path() + " row " + std::to_string(row);
  }
  if (mode_ == Mode::tokens) return windows_ ? windows_->origin(0, id) : corpus_->origin(id);
  if (mode_ == Mode::packed) return packed_->origin(0, id);
  if (mode_ != Mode::indexed) return "";
  if (const auto* jsonl = dynamic_cast<const io::JsonlSource*>(records_.get())) return jsonl->where(id);
  const io::SampleLocation where = records_->locate(id);
  const std::string& file = records_->files().at(where.file);
  return where.whole_file ? file : file + " at byte " + std::to_string(where.offset);
}

std::vector<std::uint64_t> DataSource::shard_sizes() const {
  if (mode_ == Mode::parquet) {
    // A row group is what a reader decodes at once: the locality shuffle's
    // shard, so a window of row groups is decoded once per epoch.
    std::vector<std::uint64_t> sizes;
    for (const auto& file : parquet_files_)
      for (const io::ParquetRowGroupInfo& group : file->row_groups()) sizes.push_back(group.rows);
    return sizes;
  }
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

// A folder `sluice write` has not finished (its manifest says complete:
// false) holds part of a data set: a run over it says so rather than train on
// the part in silence.
void DataSource::note_incomplete_writes() {
  std::set<std::string> dirs;
  for (const std::string& shard : shards_) {
    const std::filesystem::path p(shard);
    dirs.insert(p.has_parent_path() ? p.parent_path().string() : ".");
  }
  for (const std::string& dir : dirs) {
    std::optional<io::Manifest> manifest;
    try {
      manifest = io::read_manifest(dir);
    } catch (const Error&) {
      continue;  // a manifest.json that is not ours
    }
    if (!manifest || manifest->complete) continue;
    const auto planned = manifest->plan.find("dataset_size");
    notes_.push_back(named(dir) + " holds a conversion that is not finished (its manifest.json says complete: false): " +
                     std::to_string(manifest->samples()) + " samples in " + std::to_string(manifest->shards.size()) +
                     (manifest->shards.size() == 1 ? " shard" : " shards") + " written" + (planned != manifest->plan.end() ? " of " + planned->second : std::string()) +
                     "; run the write again to finish it");
  }
}

void DataSource::open_tfrecord() {
  shards_ = expand("sluice.tfrecord", spec_.paths);
  note_incomplete_writes();
  if (spec_.index == 0) return count_stream();
  io::TFRecordOptions options;
  options.verify_crc = spec_.verify_crc;
  options.index_dir = spec_.index_dir;
  options.on_error = on_error_;
  auto source = lazy_ ? std::make_shared<io::TFRecordSource>(shards_, std::move(lazy_indexes_), options)
                      : std::make_shared<io::TFRecordSource>(shards_, options);
  for (const io::SkippedSample& s : source->index_skips().entries())
    notes_.push_back(left_out_note(s.reason + "; the shard is read up to there"));
  note_unsaved_indexes("sluice.tfrecord", source->unsaved_indexes(), "");
  size_ = source->size();
  records_ = std::move(source);
}

// One note for the indexes a source could not save beside its files.
// `how`: what rebuilding one costs besides reading its file.
void DataSource::note_unsaved_indexes(const std::string& what, const std::vector<std::string>& unsaved,
                                      const std::string& how) {
  if (unsaved.empty()) return;
  notes_.push_back(what + ": " + std::to_string(unsaved.size()) + (unsaved.size() == 1 ? " index" : " indexes") +
                   " could not be saved (" + unsaved.front() + (unsaved.size() > 1 ? ", and others" : "") +
                   "), so the next run reads the files again to rebuild " + (unsaved.size() == 1 ? "it" : "them") + how +
                   " (index_dir = a writable folder keeps them)");
}

void DataSource::open_tar() {
  shards_ = expand("sluice.tar", spec_.paths);
  note_incomplete_writes();
  const auto gzip = std::find_if(shards_.begin(), shards_.end(), is_gzip);
  if (spec_.index == 1 && gzip != shards_.end())
    throw Error(*gzip + " is gzip-compressed and cannot be read at random offsets; "
                "leave `index` out or set index = false to stream it");
  if (spec_.index == 0 || gzip != shards_.end()) return count_stream();
  const io::TarOptions options{.on_error = on_error_};
  auto source = lazy_ ? std::make_shared<io::TarSource>(shards_, std::move(lazy_tar_indexes_), options)
                      : std::make_shared<io::TarSource>(shards_, options);
  for (const io::SkippedSample& s : source->index_skips().entries())
    notes_.push_back(left_out_note(s.reason + "; the shard is read up to there"));
  size_ = source->size();
  records_ = std::move(source);
}

void DataSource::open_jsonl() {
  io::JsonlOptions options;
  options.field = spec_.field;
  // sample.bytes is the field's text (a document for a tokenizer): a null
  // or a number there is the line's error, not the word "null".
  options.field_is_text = true;
  options.index_dir = spec_.index_dir;
  options.on_error = on_error_;
  auto source = std::make_shared<io::JsonlSource>(expand("sluice.jsonl", spec_.paths), options);
  for (const io::SkippedSample& s : source->index_skips().entries())
    notes_.push_back(left_out_note(s.reason));  // it says which of the file's lines are used
  note_unsaved_indexes("sluice.jsonl", source->unsaved_indexes(), ", decompressing a compressed one");
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

std::unique_ptr<io::ParquetReader> DataSource::parquet_reader(std::uint32_t at_least,
                                                              const std::vector<std::string>* columns) const {
  io::ParquetReaderOptions options;
  if (spec_.row_groups > 0) options.cached_row_groups = spec_.row_groups;
  options.cached_row_groups = std::max<std::size_t>(options.cached_row_groups, at_least);
  if (columns != nullptr) return std::make_unique<io::ParquetReader>(parquet_files_, *columns, options);
  return std::make_unique<io::ParquetReader>(parquet_files_,
                                             parquet_columns_.empty() ? spec_.names : parquet_columns_, options);
}

namespace {

// What the ids of `text` tokenized by `model_path` depend on (the token
// cache's key, text/token_cache.h): the source's kind, its files with their
// sizes and modification times, the JSON field or Parquet column, the
// model's bytes, EOS and the on_error rule.
std::string token_identity(const DataSource& text, const SourceSpec& spec, OnError on_error, const std::string& dtype,
                           const std::string& column) {
  std::string id = "sluice tokens v2\nkind " + text.kind() + "\nfield " + spec.text.at(0).field +
                   (column.empty() ? "" : "\ncolumn " + column) + "\neos " +
                   std::to_string(spec.eos) + "\ndtype " + dtype + "\non_error " +
                   std::to_string(static_cast<int>(on_error)) + "\n";
  std::ifstream in(spec.tokenizer, std::ios::binary);
  const std::string model((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in) throw Error("cannot read " + spec.tokenizer);
  id += "model " + std::to_string(digest_bytes(model.data(), model.size())) + "\n";
  // The files as given: a compressed JSON lines file's plain copy is made
  // again on every open when the file is damaged (FILE.plain.cut), with a new
  // time but the same bytes.
  std::vector<std::string> files;
  if (text.mode() == DataSource::Mode::parquet) {
    for (const auto& f : text.parquet_files()) files.push_back(f->path());
  } else if (const auto* jsonl = dynamic_cast<const io::JsonlSource*>(text.records().get())) {
    files = jsonl->sources();
  } else {
    files = text.records()->files();
  }
  for (const std::string& file : files) {
    struct stat st {};
    if (::stat(file.c_str(), &st) != 0) throw Error("cannot stat " + file + ": " + std::strerror(errno));
    id += file + " " + std::to_string(st.st_size) + " " + std::to_string(st.st_mtim.tv_sec) + "." +
          std::to_string(st.st_mtim.tv_nsec) + "\n";
  }
  return id;
}

// Text from an indexed source, tokenized once per node into the token cache
// (text/token_cache.h: a Megatron dataset under the cache directory, reused
// while the text, model and EOS stay the same), then memory-mapped like a
// token file. The documents are split into contiguous ranges, one per thread
// (at most the usable cores, 16); every thread is joined before this returns,
// so the zygote, forked later, inherits none (SentencePiece's encode is const
// and thread-safe, as is a RecordSource).
std::shared_ptr<const text::TokenCorpus> tokenize_corpus(const SourceSpec& spec, OnError on_error, std::uint64_t seed,
                                                         std::vector<std::string>& notes,
                                                         const remote::CacheOptions& cache, remote::CacheStats& fetched) {
  const auto model = text::SentencePiece::open(spec.tokenizer);
  // Its remote objects are unpinned once it ends here: the tokens are on disk.
  SourceSpec text_spec = spec.text.at(0);
  if (text_spec.kind == "jsonl" && text_spec.field.empty())
    throw Error("text = sluice.jsonl{ field = false } has no text to tokenize: name the key that holds it");
  std::shared_ptr<const DataSource> text = DataSource::open(text_spec, on_error, seed, cache);
  notes.insert(notes.end(), text->notes().begin(), text->notes().end());  // a damaged file's, say
  remote::add_stats(fetched, text->remote_stats());  // its remote objects count as the source's
  // Parquet: one string or byte column is the text (the one selected, or "text").
  std::string column;
  if (text->mode() == DataSource::Mode::parquet) {
    const std::vector<io::ParquetColumnInfo>& infos = text->parquet_schema()->column_infos();
    std::string names;
    for (const io::ParquetColumnInfo& c : infos) names += (names.empty() ? "" : ", ") + c.name;
    const auto it = infos.size() == 1 ? infos.begin()
                                      : std::find_if(infos.begin(), infos.end(),
                                                     [](const io::ParquetColumnInfo& c) { return c.name == "text"; });
    if (it == infos.end())
      throw Error("text = sluice.parquet reads one column as the documents: \"text\", or the one given as columns = "
                  "{ \"...\" } (these files have " + names + ")");
    if (it->dtype || it->list)
      throw Error("text = sluice.parquet: column '" + it->name + "' is " + it->type() + (it->list ? " (a list)" : "") +
                  ", not text: a document is a string or bytes column");
    column = it->name;
  } else if (text->mode() != DataSource::Mode::indexed) {
    throw Error("text = sluice." + text->kind() +
                " is read as a stream, not by index: give index = true (text sources: files, folders, tfrecord, tar, "
                "jsonl, parquet)");
  }
  if (spec.eos < 0) throw Error("text needs an eos id to end each document (the model " + spec.tokenizer + " has none)");
  const std::string* jsonl_field = text->kind() == "jsonl" ? &spec.text.at(0).field : nullptr;
  cpu_set_t cpus;
  const std::uint64_t cores = sched_getaffinity(0, sizeof cpus, &cpus) == 0 ? CPU_COUNT(&cpus) : 1;
  const auto dtype = model->vocab_size() <= 65536 && spec.eos < 65536 ? text::TokenType::uint16 : text::TokenType::uint32;
  text::TokenCacheRequest request;
  request.dir = cache.dir.empty() ? remote::default_cache_dir() : cache.dir;
  // The text source's errors name its remote objects' URLs (named()), not their cached copies.
  const auto named = [&](auto&& step) {
    try {
      return step();
    } catch (const Error& e) {
      throw Error(text->named(e.what()));
    }
  };
  request.identity = named([&] { return token_identity(*text, spec, on_error, text::name_of(dtype), column); });
  request.documents = text->size();
  request.threads = static_cast<unsigned>(std::min<std::uint64_t>(cores, 16));
  request.dtype = dtype;
  request.eos = static_cast<std::uint32_t>(spec.eos);
  // on_error = "skip": a document that does not read (a broken JSON line,
  // one without the field or whose field is not a string) is left out of
  // the tokens; the first such (by document order) is named in the note.
  std::mutex skipped_mutex;
  std::uint64_t skipped = 0;
  std::uint64_t first_skipped = UINT64_MAX;
  std::string first_skipped_why;
  // Parquet: a reader of the text column for each thread (a reader is not
  // thread-safe); each thread's documents are consecutive rows.
  std::mutex readers_mutex;
  std::map<std::thread::id, std::unique_ptr<io::ParquetReader>> readers;
  const std::vector<std::string> columns{column};
  auto parquet_text = [&](std::uint64_t id, std::string& bytes) {
    io::ParquetReader* reader = nullptr;
    {
      const std::lock_guard lock(readers_mutex);
      std::unique_ptr<io::ParquetReader>& mine = readers[std::this_thread::get_id()];
      if (!mine) mine = text->parquet_reader(0, &columns);
      reader = mine.get();
    }
    io::ParquetValue value;
    reader->read(id, {&value, 1});
    if (value.data == nullptr)
      throw RecordError(text->named(text->origin(id)) + ": column '" + column + "' is null, not a document");
    bytes.assign(reinterpret_cast<const char*>(value.data), value.bytes);
  };
  request.encode = [&](std::uint64_t id, std::vector<std::int32_t>& ids) {
    // One buffer set per thread: encode runs on several threads at once.
    thread_local std::vector<std::byte> buffer;
    thread_local std::string bytes;
    thread_local io::Sample sample;
    try {
      if (!column.empty()) {
        parquet_text(id, bytes);
        model->encode(bytes, &ids);
        return true;
      }
      io::read_sample(*text->records(), id, buffer, sample);
    } catch (const RecordError& e) {  // the line's own fault; a failed read is no reason to drop it for good
      if (on_error != OnError::skip) {
        if (std::strstr(e.what(), "on_error") != nullptr) throw;
        throw Error(std::string(e.what()) + " (on_error = \"skip\" leaves such documents out of the tokens)");
      }
      const std::lock_guard lock(skipped_mutex);
      ++skipped;
      if (id < first_skipped) first_skipped = id, first_skipped_why = text->named(e.what());
      return false;
    }
    // A JSON line's document is its `field`; another record's, all its bytes.
    bytes.clear();
    if (jsonl_field != nullptr) {
      const io::Field* f = sample.field(*jsonl_field);
      if (f != nullptr) bytes.assign(reinterpret_cast<const char*>(f->bytes.data()), f->bytes.size());
    } else {
      for (const io::Field& f : sample.fields) bytes.append(reinterpret_cast<const char*>(f.bytes.data()), f.bytes.size());
    }
    model->encode(bytes, &ids);
    return true;
  };
  text::TokenCacheResult tokens;
  try {
    tokens = named([&] { return text::tokenize_cached(request); });
  } catch (const Error&) {
    if (skipped == 0 || skipped < request.documents) throw;  // (every one left out: the cache keeps nothing)
    throw Error("sluice.tokens: every one of the " + std::to_string(request.documents) +
                " text documents was left out by on_error = \"skip\", so nothing was tokenized; the first: " +
                first_skipped_why + (jsonl_field ? " (is field = \"" + *jsonl_field + "\" the key the lines hold?)" : ""));
  }
  char line[400];
  if (tokens.reused)
    std::snprintf(line, sizeof line, "tokens: %llu text documents, tokenized by an earlier run: %s",
                  static_cast<unsigned long long>(text->size()), tokens.idx.c_str());
  else
    std::snprintf(line, sizeof line, "tokens: %llu text documents tokenized into %llu tokens in %.2f s (%u threads), kept in %s",
                  static_cast<unsigned long long>(text->size()), static_cast<unsigned long long>(tokens.tokens),
                  tokens.seconds, request.threads, tokens.idx.c_str());
  notes.push_back(line);
  text::CorpusOptions corpus_options{.dtype = dtype, .vocab_size = spec.vocab_size};
  // Where a document's text lies (peek, messages), when document d is text
  // record d (none was left out) and the text is local: the text source
  // opened again when first asked (under a mutex; once, failed or not), so
  // that its index is not held for the run. Remote text is not fetched again
  // for it: the cache's file is named alone.
  struct TextOrigin {
    std::mutex mutex;
    bool aligned = false, tried = false;
    std::shared_ptr<const DataSource> text;
  };
  auto origin = std::make_shared<TextOrigin>();
  const bool local = std::none_of(text_spec.paths.begin(), text_spec.paths.end(),
                                  [](const std::string& p) { return remote::is_remote(p); });
  if (local)
    corpus_options.text_origin = [origin, text_spec, on_error, seed, cache](std::uint64_t d) noexcept {
      try {
        const std::lock_guard lock(origin->mutex);
        if (!origin->aligned) return std::string();
        if (!origin->tried) {
          origin->tried = true;
          origin->text = DataSource::open(text_spec, on_error, seed, cache);
        }
        return origin->text ? origin->text->named(origin->text->origin(d)) : std::string();
      } catch (const std::exception&) {
        return std::string();  // the text gone since: the cache's file is named alone
      }
    };
  auto corpus = text::TokenCorpus::open_megatron(tokens.idx, tokens.bin, corpus_options);
  {
    const std::lock_guard lock(origin->mutex);
    origin->aligned = corpus->documents() == text->size();
  }
  // The documents left out (counted from the dataset, so a reused one says it too).
  if (corpus->documents() < text->size())
    notes.push_back(left_out_note(std::to_string(text->size() - corpus->documents()) + " of " +
                                  std::to_string(text->size()) + " text documents left out of the tokens" +
                                  (first_skipped_why.empty() ? std::string(" when they were tokenized")
                                                             : "; the first: " + first_skipped_why)));
  return corpus;
}

std::shared_ptr<const text::TokenCorpus> open_corpus(const SourceSpec& spec) {
  text::CorpusOptions options;
  if (!spec.dtype.empty()) {
    options.dtype = text::parse_token_type(spec.dtype);
    if (!options.dtype) throw Error("dtype must be \"uint16\" or \"uint32\", got \"" + spec.dtype + "\"");
  }
  if (spec.eos >= 0) options.eos = static_cast<std::uint32_t>(spec.eos);
  options.vocab_size = spec.vocab_size;
  std::vector<text::TokenCorpus::Input> inputs;
  for (std::size_t i = 0; i < spec.paths.size(); ++i) {
    if (i < spec.megatron_idx.size() && !spec.megatron_idx[i].empty()) {
      inputs.push_back({spec.paths[i], spec.megatron_idx[i]});
      continue;
    }
    for (std::string& path : expand("sluice.tokens", {spec.paths[i]})) inputs.push_back({std::move(path)});
  }
  return text::TokenCorpus::open(inputs, options);
}

text::PackOptions pack_options(const SourceSpec& spec) {
  const auto mode = text::parse_pack_mode(spec.pack_mode);
  if (!mode) throw Error("pack.mode must be \"concat\" or \"best_fit\", got \"" + spec.pack_mode + "\"");
  return {.seq_len = spec.seq_len, .mode = *mode, .window = spec.pack_window};
}

std::string packing_note(const text::Packing& packing) {
  const auto& o = packing.options();
  const double rows = static_cast<double>(packing.rows()) * o.seq_len;
  char line[256];
  if (o.mode == text::PackMode::concat) {
    std::snprintf(line, sizeof line, "pack: %llu documents, %llu tokens into %llu rows of %u (concat; %llu tail tokens left out)",
                  static_cast<unsigned long long>(packing.corpus().documents()),
                  static_cast<unsigned long long>(packing.corpus().tokens()),
                  static_cast<unsigned long long>(packing.rows()), o.seq_len,
                  static_cast<unsigned long long>(packing.tail_tokens()));
  } else {
    std::snprintf(line, sizeof line, "pack: %llu documents, %llu tokens into %llu rows of %u (best_fit, window %u; padding %.2f%%)",
                  static_cast<unsigned long long>(packing.corpus().documents()),
                  static_cast<unsigned long long>(packing.corpus().tokens()),
                  static_cast<unsigned long long>(packing.rows()), o.seq_len, o.window,
                  100.0 * static_cast<double>(packing.padding_tokens()) / rows);
  }
  return line;
}

}  // namespace

void DataSource::open_tokens() {
  corpus_ = spec_.text.empty() ? open_corpus(spec_) : tokenize_corpus(spec_, on_error_, seed_, notes_, cache_, remote_);
  if (spec_.seq_len == 0) {
    mode_ = Mode::tokens;
    size_ = corpus_->documents();
    if (spec_.window > 0) {
      windows_ = std::make_shared<text::Packing>(corpus_, text::PackOptions{.seq_len = spec_.window});
      size_ = windows_->rows();
    }
    return;
  }
  if (spec_.window > 0) throw Error("window (samples of window + 1 tokens) and the pipeline's pack exclude each other");
  auto packing = std::make_shared<text::Packing>(corpus_, pack_options(spec_));
  notes_.push_back(packing_note(*packing));
  mode_ = Mode::packed;
  size_ = packing->rows();
  packed_ = std::move(packing);
}

void DataSource::open_mix() {
  if (spec_.seq_len == 0) throw Error("a mixture needs the pipeline's pack = { seq_len = ... }");
  std::vector<std::shared_ptr<const text::PackedSource>> parts;
  for (std::size_t k = 0; k < spec_.parts.size(); ++k) {
    try {
      SourceSpec& part = spec_.parts[k];
      fetch_remote(part, cache_);
      auto corpus = part.text.empty() ? open_corpus(part) : tokenize_corpus(part, on_error_, seed_, notes_, cache_, remote_);
      auto packing = std::make_shared<text::Packing>(std::move(corpus), pack_options(spec_));
      notes_.push_back("source " + std::to_string(k + 1) + ": " + packing_note(*packing));
      parts.push_back(std::move(packing));
    } catch (const Error& e) {
      throw Error("source " + std::to_string(k + 1) + ": " + e.what());
    }
  }
  auto mix = std::make_shared<text::Mix>(
      std::move(parts), spec_.weights,
      text::MixOptions{.size = spec_.size, .shuffle = spec_.shuffle, .seed = seed_, .phases = spec_.phases});
  std::string quotas;
  for (std::size_t k = 0; k < spec_.parts.size(); ++k)
    quotas += (k ? ", " : "") + std::to_string(mix->schedule().quota(static_cast<std::uint32_t>(k)));
  notes_.push_back("mix: " + std::to_string(mix->rows()) + " rows per epoch; every " +
                   std::to_string(mix->schedule().period()) + " rows hold " + quotas + " of the sources in turn");
  for (const text::MixPhase& phase : spec_.phases) {
    std::string weights;
    for (std::size_t k = 0; k < phase.weights.size(); ++k) {
      char w[32];
      std::snprintf(w, sizeof w, "%s%g", k ? ", " : "", phase.weights[k]);
      weights += w;
    }
    notes_.push_back("mix: from global row " + std::to_string(phase.from_row) + " (epoch " +
                     std::to_string(phase.from_row / mix->rows()) + ", row " + std::to_string(phase.from_row % mix->rows()) +
                     ") the weights are " + weights);
  }
  mode_ = Mode::packed;
  size_ = mix->rows();
  packed_ = std::move(mix);
}

std::function<std::uint64_t(std::uint64_t)> DataSource::order_key() const {
  auto mix = std::dynamic_pointer_cast<const text::Mix>(packed_);
  if (!mix) return {};
  return [mix](std::uint64_t position) { return mix->order_key(position); };
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
        notes_.push_back(left_out_note(s.reason + "; the shard is read up to there"));
    }
  } else {
    std::unique_ptr<io::RecordStream> all = stream(0, 1, on_error_);
    io::Sample sample;
    while (all->next(sample)) ++size_;
    for (const io::SkippedSample& s : all->skips().entries())
      notes_.push_back(left_out_note(s.reason));
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
