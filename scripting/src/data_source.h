// data_source.h: the data set a pipeline's native source names (sluice.files,
// sluice.folders, sluice.tfrecord, sluice.tar, sluice.jsonl, sluice.npy,
// sluice.parquet, sluice.tokens, sluice.mix), opened once.
//
// load_script opens it in the launching process: file lists and globs are
// expanded, TFRecord shards and JSON lines indexed (sidecars loaded or built;
// compressed JSON lines decompressed once), tar headers scanned, .npy files
// mapped, Parquet footers read. The Loader forks it into every worker with the
// ScriptProducer, so workers neither re-scan nor re-index; each reads through
// its own RecordFeed (record_feed.h). Remote paths (s3://, http(s)://, brace
// ranges, S3 globs) are fetched into the node cache (remote/cache.h) first:
// every reader then opens a local, whole file; except indexed TFRecord and
// uncompressed tar shards whose indexes are published beside them (URL.idx):
// only those are fetched here, and each worker fetches the shards its batches
// need (lazy_remote()).
//
// Three ways to reach records:
//   indexed  random access by dataset index (files, folders, TFRecord with an
//            index, uncompressed tar, JSON lines): an io::RecordSource read by an AsyncReader;
//   stream   front to back (TFRecord without an index, gzip tar): each worker
//            streams its own partition of the shards (see sluice.lua);
//   npy      rows of memory-mapped arrays, by dataset index;
//   parquet  rows of Parquet tables, by dataset index (each feed decodes row
//            groups with its own io::ParquetReader).
//   tokens   documents of a token corpus (sluice.tokens without `pack`), by index,
//            or windows of window + 1 tokens of the concatenated documents;
//   packed   rows of packed tokens (sluice/text/packing.h, mixing.h), by
//            (epoch, index): sluice.tokens or sluice.mix with `pack`.
//
// Errors: open() throws sluice::Error naming the source and the file.
// Thread safety: immutable after open(); holds no threads, so it may cross
// fork(). Its only descriptors are the pins of its remote objects
// (remote::Pins: O_CLOEXEC shared flocks, harmless in a forked child), held
// until the last copy of it ends: in the launching process, the run's end.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "sluice/io/npy.h"
#include "sluice/io/parquet.h"
#include "sluice/io/record_source.h"
#include "sluice/io/record_stream.h"
#include "sluice/io/tar_index.h"
#include "sluice/io/tfrecord.h"
#include "sluice/options.h"
#include "sluice/remote/cache.h"
#include "sluice/text/mixing.h"
#include "sluice/text/packing.h"
#include "sluice/text/token_file.h"

namespace sluice::scripting {

// A native source as the pipeline describes it (read from its Lua table).
struct SourceSpec {
  std::string kind;                     // files, folders, tfrecord, tar, jsonl, npy, parquet
  std::vector<std::string> paths;       // files, patterns, shards or arrays; folders: the root
  std::vector<std::string> megatron_idx;  // tokens over URLs: paths[i]'s Megatron index, downloaded
                                          // ("" or absent: as TokenCorpus::open finds it)
  std::vector<std::string> names;       // npy: one field name per array; parquet: columns (empty: all)
  std::vector<std::string> members;     // npy: the .npz member per array; "" for a .npy file
  std::vector<std::string> extensions;  // folders: kept extensions; empty keeps all
  int index = -1;                       // tfrecord, tar: 1 indexed, 0 streaming, -1 automatic
  std::string index_dir;                // tfrecord, jsonl: where sidecar indexes live
  std::string field = "text";            // jsonl: the key every line must have (dotted: nested)
  bool verify_crc = true;               // tfrecord
  bool shuffle_shards = false;          // streaming: a fresh shard order per pass
  std::uint64_t shuffle_buffer = 0;     // streaming: records to shuffle among
  std::uint64_t size = 0;               // streaming: records in the data set; 0 = count them;
                                        // mix: rows per epoch, 0 = the sources' rows summed
  // tokens
  std::uint32_t row_groups = 0;         // parquet: decoded row groups kept per reader; 0 = default
  std::string dtype;                    // tokens: "" = not given (a Megatron index says it)
  std::int64_t eos = -1;                // -1: none
  std::uint64_t vocab_size = 0;
  std::uint32_t window = 0;             // > 0: samples are windows of window + 1 tokens
  std::vector<SourceSpec> text;         // one source whose records are text, tokenized at load
  std::string tokenizer;                // with text: the SentencePiece model
  // tokens, mix: the pipeline's `pack` (seq_len 0: no packing) and shuffle
  std::uint32_t seq_len = 0;
  std::string pack_mode = "concat";
  std::uint32_t pack_window = 64;
  bool shuffle = false;
  // mix
  std::vector<SourceSpec> parts;
  std::vector<double> weights;
  std::vector<text::MixPhase> phases;   // later weights, from a global row on
};

// The node cache's options for this process: SLUICE_CACHE_DIR (else
// $XDG_CACHE_HOME/sluice), SLUICE_CACHE_LIMIT in bytes (0 or unset: no limit),
// credentials and endpoint from the AWS variables (remote/credentials.h).
remote::CacheOptions remote_cache_options();

struct NpyColumn {
  std::string name;
  io::NpyArray array;
};

// Remote shards the workers fetch themselves (record_feed.h): records()
// names their places in the node cache (Cache::path_of), which may not hold
// them yet; urls[i] is records()->files()[i], sizes[i] its size.
struct LazyRemote {
  remote::CacheOptions cache;  // revalidation off: done when the source opened
  std::vector<std::string> urls;
  std::vector<std::uint64_t> sizes;
  std::size_t present = 0;     // of them, found whole in the cache at open
};

// A note that data was left out at open under on_error = "skip" (a damaged
// shard read up to the damage, a cut compressed file's whole lines), and
// whether a note is one: Script::left_out lists them apart from the others.
std::string left_out_note(const std::string& what);
bool is_left_out_note(std::string_view note);

class DataSource {
 public:
  enum class Mode { indexed, stream, npy, parquet, tokens, packed };

  // `cache`: where remote paths are fetched to, and how.
  static std::shared_ptr<const DataSource> open(const SourceSpec& spec, OnError on_error, std::uint64_t seed,
                                                const remote::CacheOptions& cache = remote_cache_options());

  Mode mode() const { return mode_; }
  const std::string& kind() const { return spec_.kind; }
  // Remote objects are read from their node-cache copies; what a user sees
  // names the URL. `message` with every such copy's path replaced by its
  // URL; the URL of a copy's path, or nullptr for a path of no remote object.
  std::string named(std::string message) const;
  const std::string* url_of(std::string_view path) const;
  std::uint64_t size() const { return size_; }
  // What opening found worth telling the user (indexes cut short, counted records).
  const std::vector<std::string>& notes() const { return notes_; }

  // What fetching remote objects took (all zero for local data).
  const remote::CacheStats& remote_stats() const { return remote_; }

  // indexed
  const std::shared_ptr<const io::RecordSource>& records() const { return records_; }
  // indexed: the remote shards left for the workers to fetch, else null.
  const std::shared_ptr<const LazyRemote>& lazy_remote() const { return lazy_; }

  // stream: shards, and a stream over partition `part` of `parts` (its bad
  // records thrown, or noted in its skips(), as `on_error` says).
  std::size_t shard_count() const { return shards_.size(); }
  std::unique_ptr<io::RecordStream> stream(std::uint32_t part, std::uint32_t parts, OnError on_error) const;

  // npy
  const std::vector<NpyColumn>& columns() const { return columns_; }

  // Samples per file of an indexed source, or rows per row group of every
  // Parquet file, in dataset order (Options::shard_sizes, for the locality
  // shuffle); empty for streams and npy, which have no such order.
  std::vector<std::uint64_t> shard_sizes() const;

  // parquet: the files, and a reader of the selected columns (one per feed)
  // that keeps the source's `row_groups` decoded groups (default 2), or
  // `at_least` when that is more.
  // `columns`: these instead of the selected ones.
  std::unique_ptr<io::ParquetReader> parquet_reader(std::uint32_t at_least = 0,
                                                    const std::vector<std::string>* columns = nullptr) const;
  const std::vector<std::shared_ptr<const io::ParquetFile>>& parquet_files() const { return parquet_files_; }
  // parquet: the `row_groups` the pipeline gave (0: none, the default of 2).
  std::uint32_t parquet_row_groups() const { return spec_.row_groups; }
  // parquet: the reader made at open, for the selected columns' names and
  // types (column_infos(), as in file(0)); null for other sources.
  const io::ParquetReader* parquet_schema() const { return origin_reader_.get(); }

  // tokens: the corpus, whose documents are the samples
  const std::shared_ptr<const text::TokenCorpus>& corpus() const { return corpus_; }
  // packed: the rows
  const std::shared_ptr<const text::PackedSource>& packed() const { return packed_; }
  // Options::order_key: a mixture's (its rows depend on more than the plan); empty for other sources.
  std::function<std::uint64_t(std::uint64_t)> order_key() const;
  // tokens with a window: the windows (rows of a concat packing), else null
  const std::shared_ptr<const text::Packing>& windows() const { return windows_; }

  // For people looking at samples (sluice peek): where dataset sample `id`
  // lies ("DIR/cat/1.jpg", "shard.tar at byte 1536", "x.npy row 7"), or "" when
  // the source cannot say (streaming); the class names of sluice.folders by
  // label (empty for other sources) and sample `id`'s label (-1 without one).
  std::string origin(std::uint64_t id) const;
  std::vector<std::string> classes() const;
  std::int64_t label(std::uint64_t id) const;

 private:
  DataSource() = default;
  void fetch_remote(SourceSpec& spec, const remote::CacheOptions& options);
  bool open_lazily(const std::vector<std::string>& urls, const remote::CacheOptions& options);
  void add_remote_stats(const remote::CacheStats& stats);
  void open_files();
  void note_incomplete_writes();
  void open_tfrecord();
  void open_tar();
  void open_jsonl();
  void note_unsaved_indexes(const std::string& what, const std::vector<std::string>& unsaved, const std::string& how);
  void open_npy();
  void open_parquet();
  void count_stream();
  void open_tokens();
  void open_mix();

  SourceSpec spec_;
  OnError on_error_ = OnError::fail;
  std::uint64_t seed_ = 0;
  Mode mode_ = Mode::indexed;
  std::uint64_t size_ = 0;
  std::vector<std::string> notes_;
  std::shared_ptr<const io::RecordSource> records_;
  std::vector<std::string> shards_;
  std::vector<NpyColumn> columns_;
  remote::CacheStats remote_;
  remote::CacheOptions cache_;  // for the parts of a mixture and a text source
  std::vector<std::shared_ptr<const remote::Pins>> pins_;  // the remote objects, kept from eviction
  struct PathHash {  // looks a string_view up without making a string
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
  };
  // a remote object's cache path -> its URL
  std::unordered_map<std::string, std::string, PathHash, std::equal_to<>> urls_;
  std::shared_ptr<const LazyRemote> lazy_;
  std::vector<io::TFRecordIndex> lazy_indexes_;  // until open_tfrecord takes them
  std::vector<io::TarIndex> lazy_tar_indexes_;   // until open_tar takes them

  std::vector<std::shared_ptr<const io::ParquetFile>> parquet_files_;
  std::vector<std::string> parquet_columns_;
  std::unique_ptr<io::ParquetReader> origin_reader_;  // for origin(): locate() only
  std::shared_ptr<const text::TokenCorpus> corpus_;
  std::shared_ptr<const text::PackedSource> packed_;
  std::shared_ptr<const text::Packing> windows_;
};

}  // namespace sluice::scripting
