#include "io_commands.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "dataset_report.h"
#include "inspect_folder.h"
#include "sluice/error.h"
#include "sluice/io/example.h"
#include "sluice/io/file_source.h"
#include "sluice/io/jsonl.h"
#include "sluice/io/npy.h"
#include "sluice/io/parquet.h"
#include "sluice/io/tar.h"
#include "sluice/io/tar_index.h"
#include "sluice/io/tar_stream.h"
#include "sluice/io/tfrecord.h"
#include "sluice/remote/url.h"
#include "sluice/text/token_file.h"

namespace sluice::cli {
namespace {

using namespace sluice::io;

constexpr const char* kInspectUsage = R"(usage: sluice inspect [--records N] FILE|DIR...

Prints each file's format (TFRecord, WebDataset tar, gzip tar, .npy, .npz,
Parquet, JSON lines, a Megatron-LM token dataset, or a plain file), its record count, and the fields and sizes of its first records
(tf.train.Example or SequenceExample features by name and kind; other records
are said to be no Example, and names are printed with odd bytes escaped). Checks TFRecord CRCs and tar
header checksums on the way. A Parquet file shows its schema (each column's
physical and logical type, what a sample gets, and why a column cannot be
read), its row groups with their sizes and codecs, and its row count (not its
rows). A JSON lines file (plain, gzip or zstd) shows its line count and its first
lines' keys with each value's size and start (a string's text unescaped, other
values as JSON text, as sluice.jsonl hands them to map); nothing is written
beside it.

A directory is read as sluice.folders reads an image folder (DIR/CLASS/...):
its classes in label order with their file counts, the files that are not
JPEG or PNG, and the files outside every class folder.

options:
  --records N   records to show per file (default 3)
)";

constexpr const char* kIndexUsage = R"(usage: sluice index [--index-dir DIR] FILE...

Builds the offset index of each TFRecord file: a sidecar FILE.idx with one
"offset frame_size" line per record (the format of DALI's tfrecord2idx), which
gives random access and global shuffling. Reads only record headers.
An uncompressed WebDataset tar (FILE.tar) gets FILE.tar.idx: its samples' keys
and each member's field, offset and size (sluice/io/tar_index.h). Published
beside the shard in a store (s3:// or http(s)://), it lets a run fetch only the
indexes when it opens and the workers fetch the shards as the plan needs them.
A JSON lines file (.jsonl, .ndjson, plain, gzip or zstd) gets the index that
sluice.jsonl loads, and a compressed one its decompressed copy FILE.plain, so
that no run (and no rank) has to build them at start-up.

options:
  --index-dir DIR   write the indexes in DIR instead of beside each file
                    (not for tars: their index is read only beside the shard)
)";

enum class Format { tfrecord, tar, tar_gz, npy, npz, parquet, jsonl, megatron, file };

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

Format detect(const std::string& path) {
  unsigned char head[8] = {};
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot open " + path + ": " + std::strerror(errno));
  in.read(reinterpret_cast<char*>(head), sizeof head);
  const auto got = static_cast<std::size_t>(in.gcount());
  if (got >= 6 && std::memcmp(head, "\x93NUMPY", 6) == 0) return Format::npy;
  if (looks_like_zip({reinterpret_cast<const std::byte*>(head), got})) return Format::npz;
  if (got >= 4 && (std::memcmp(head, "PAR1", 4) == 0 || std::memcmp(head, "PARE", 4) == 0)) return Format::parquet;
  // A Megatron dataset: PREFIX.idx (with its magic) or PREFIX.bin beside one.
  auto megatron_index = [](const std::string& idx) {
    char magic[7] = {};
    std::ifstream f(idx, std::ios::binary);
    return f.read(magic, sizeof magic) && std::memcmp(magic, "MMIDIDX", 7) == 0;
  };
  if (ends_with(path, ".idx") && got >= 7 && std::memcmp(head, "MMIDIDX", 7) == 0) return Format::megatron;
  if (ends_with(path, ".bin") && megatron_index(path.substr(0, path.size() - 4) + ".idx")) return Format::megatron;
  if (got >= 2 && head[0] == 0x1f && head[1] == 0x8b &&
      (ends_with(path, ".tgz") || ends_with(path, ".tar.gz")))
    return Format::tar_gz;
  if (ends_with(path, ".tar")) return Format::tar;
  if (path.find(".jsonl") != std::string::npos || path.find(".ndjson") != std::string::npos) return Format::jsonl;
  if (ends_with(path, ".tfrecord") || ends_with(path, ".tfrecords") || ends_with(path, ".tfr"))
    return Format::tfrecord;
  // Otherwise a TFRecord is recognised by a valid first header.
  try {
    if (scan_tfrecord(path).records() > 0) return Format::tfrecord;
  } catch (const Error&) {
  }
  return Format::file;
}

// `text` safe to print: valid UTF-8 kept, control bytes, invalid UTF-8 and
// backslashes written as \xNN (\\ for a backslash).
std::string escaped(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    std::size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
    bool ok = len > 0 && i + len <= text.size() && (c >= 0x20 || len > 1) && c != 0x7f && c != '\\';
    for (std::size_t k = 1; ok && k < len; ++k) ok = (static_cast<unsigned char>(text[i + k]) & 0xc0) == 0x80;
    if (ok) {
      out.append(text.substr(i, len));
      i += len;
      continue;
    }
    char hex[8];
    std::snprintf(hex, sizeof hex, "\\x%02x", c);
    out += c == '\\' ? "\\\\" : hex;
    ++i;
  }
  return out;
}

// Whether a name would need escaping: not one a tf.train.Example writer gives.
bool odd_names(const std::vector<FeatureInfo>& features) {
  for (const FeatureInfo& f : features)
    if (escaped(f.name) != f.name) return true;
  return false;
}

constexpr const char* kOddNames =
    "feature names hold control or non-UTF-8 bytes (another protobuf message, e.g. an "
    "ExampleListWithContext?)";

void print_fields(const Sample& s) {
  for (const Field& f : s.fields)
    std::printf("    %-12s %zu bytes\n", escaped(f.name).c_str(), f.bytes.size());
}

void print_features(const std::vector<FeatureInfo>& features, const char* count_unit) {
  for (const FeatureInfo& f : features)
    std::printf("    %-24s %-10s %zu %s\n", escaped(f.name).c_str(),
                std::string(feature_kind_name(f.kind)).c_str(), f.count, count_unit);
}

// What record `bytes` is: a tf.train.Example (its features), a SequenceExample
// (context and feature_lists), or "not a tf.train.Example: why".
void print_record(Example& ex, std::span<const std::byte> bytes) {
  std::string why;
  try {
    ex.parse(bytes);
    const std::vector<FeatureInfo> features = ex.features();
    if (features.empty()) why = "it parses to no features";
    else if (odd_names(features)) why = kOddNames;
    else return print_features(features, "values");
  } catch (const Error& e) {
    why = e.what();
  }
  try {
    ex.parse_sequence(bytes);
    const std::vector<FeatureInfo> context = ex.features(), lists = ex.feature_lists();
    if (!lists.empty() && !odd_names(context) && !odd_names(lists)) {
      std::printf("    tf.train.SequenceExample, context:\n");
      print_features(context, "values");
      std::printf("    feature_lists:\n");
      return print_features(lists, "steps");
    }
    if (!lists.empty()) why = kOddNames;
  } catch (const Error&) {
  }
  std::printf("    not a tf.train.Example: %s\n", escaped(why).c_str());
}

void inspect_tfrecord(const std::string& path, std::size_t show) {
  TFRecordOptions options;
  options.write_index = false;
  TFRecordSource source({path}, options);
  std::printf("%s: TFRecord, %llu records\n", path.c_str(),
              static_cast<unsigned long long>(source.size()));
  std::vector<std::byte> buf;
  Sample s;
  Example ex;
  for (std::uint64_t i = 0; i < source.size() && i < show; ++i) {
    read_sample(source, i, buf, s);
    std::printf("  record %llu at byte offset %llu: %zu bytes\n", static_cast<unsigned long long>(i),
                static_cast<unsigned long long>(s.offset), s.fields[0].bytes.size());
    print_record(ex, s.fields[0].bytes);
  }
}

void inspect_tar(const std::string& path, std::size_t show) {
  TarSource source({path});
  std::printf("%s: WebDataset tar, %llu samples\n", path.c_str(),
              static_cast<unsigned long long>(source.size()));
  std::vector<std::byte> buf;
  Sample s;
  for (std::uint64_t i = 0; i < source.size() && i < show; ++i) {
    read_sample(source, i, buf, s);
    std::printf("  sample %llu key %s:\n", static_cast<unsigned long long>(i), escaped(s.key).c_str());
    print_fields(s);
  }
}

void inspect_tar_gz(const std::string& path, std::size_t show) {
  TarStream stream({path});
  Sample s;
  std::uint64_t n = 0;
  std::string shown;  // printed after the count, which needs the whole stream
  while (stream.next(s)) {
    if (n < show) {
      shown += "  sample " + std::to_string(n) + " key " + escaped(s.key) + ":\n";
      for (const Field& f : s.fields)
        shown += "    " + escaped(f.name) + " " + std::to_string(f.bytes.size()) + " bytes\n";
    }
    ++n;
  }
  std::printf("%s: gzip-compressed WebDataset tar (streaming only), %llu samples\n%s", path.c_str(),
              static_cast<unsigned long long>(n), shown.c_str());
}

// "float32 [4, 3] C order, 4 rows of 12 bytes".
std::string describe(const NpyArray& a) {
  std::string shape;
  for (std::int64_t d : a.shape()) shape += (shape.empty() ? "" : ", ") + std::to_string(d);
  return std::string(dtype_name(a.dtype())) + " [" + shape + "] " + (a.fortran_order() ? "Fortran" : "C") +
         " order, " + std::to_string(a.rows()) + " rows of " + std::to_string(a.row_bytes()) + " bytes";
}

void inspect_npy(const std::string& path) {
  std::printf("%s: .npy %s\n", path.c_str(), describe(NpyArray(path)).c_str());
}

void inspect_npz(const std::string& path) {
  NpzArchive npz(path);
  std::printf("%s: .npz archive, %zu members\n", path.c_str(), npz.members().size());
  for (const NpzMember& m : npz.members())
    std::printf("  %s (%s): %s\n", escaped(m.name).c_str(), m.deflated ? "deflated" : "stored",
                describe(npz.array(m.name)).c_str());
}

// The line count and the first lines' keys, each value's bytes and start.
// Indexes (and a compressed file's plain copy) go to a temporary folder:
// inspecting leaves nothing beside the file.
void inspect_jsonl(const std::string& path, std::size_t show) {
  char folder[] = "/tmp/sluice-inspect-XXXXXX";
  if (::mkdtemp(folder) == nullptr) throw Error(std::string("cannot create a temporary folder: ") + std::strerror(errno));
  struct Remove {
    std::string dir;
    ~Remove() {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  } remove{folder};
  const JsonlSource source({path}, JsonlOptions{.field = "", .index_dir = folder, .write_index = false});
  const bool compressed = source.files()[0] != path;
  std::printf("%s: JSON lines%s, %llu line%s\n", path.c_str(), compressed ? " (compressed)" : "",
              static_cast<unsigned long long>(source.size()), source.size() == 1 ? "" : "s");
  std::vector<std::byte> buf;
  Sample s;
  for (std::uint64_t id = 0; id < std::min<std::uint64_t>(show, source.size()); ++id) {
    read_sample(source, id, buf, s);
    std::printf("  %s\n", source.where(id).c_str());
    for (const Field& f : s.fields) {
      // At most 60 bytes, cut before a character rather than inside one.
      std::size_t cut = std::min<std::size_t>(f.bytes.size(), 60);
      while (cut > 0 && cut < f.bytes.size() && (static_cast<unsigned char>(f.bytes[cut]) & 0xC0) == 0x80) --cut;
      const std::string_view value(reinterpret_cast<const char*>(f.bytes.data()), cut);
      std::printf("    %-16s %zu bytes: %s%s\n", escaped(f.name).c_str(), f.bytes.size(), escaped(value).c_str(),
                  cut < f.bytes.size() ? "..." : "");
    }
  }
}

// A Megatron-LM indexed dataset (PREFIX.idx + PREFIX.bin), as sluice.tokens
// reads it: checked whole (pointers, lengths, dtype) on the way.
void inspect_megatron(const std::string& path, std::size_t show) {
  const std::string prefix = path.substr(0, path.size() - 4);
  const auto corpus = text::TokenCorpus::open_megatron(prefix + ".idx", prefix + ".bin", {});
  std::printf("%s: Megatron-LM indexed dataset (%s.idx + .bin), %s ids, %llu documents, %llu tokens "
              "(sluice.tokens{ \"%s\" } reads it)\n",
              path.c_str(), prefix.c_str(), text::name_of(corpus->dtype(0)),
              static_cast<unsigned long long>(corpus->documents()), static_cast<unsigned long long>(corpus->tokens()),
              prefix.c_str());
  for (std::uint64_t d = 0; d < std::min<std::uint64_t>(show, corpus->documents()); ++d) {
    const std::uint64_t n = corpus->document(d).length;
    std::string ids;
    for (std::uint64_t i = 0; i < std::min<std::uint64_t>(n, 12); ++i) ids += (i ? " " : "") + std::to_string(corpus->token(d, i));
    std::printf("  document %llu: %llu tokens: %s%s\n", static_cast<unsigned long long>(d),
                static_cast<unsigned long long>(n), ids.c_str(), n > 12 ? " ..." : "");
  }
}

void inspect_file(const std::string& path) {
  auto source = FileSource::from_list({path});
  std::vector<std::byte> buf;
  Sample s;
  read_sample(*source, 0, buf, s);
  std::printf("%s: plain file, 1 sample of %zu bytes\n", path.c_str(), s.fields[0].bytes.size());
}

}  // namespace

int inspect_command(int argc, char** argv) {
  std::size_t show = 3;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a == "-h" || a == "--help") {
      std::fputs(kInspectUsage, stdout);
      return 0;
    }
    if (a == "--records" && i + 1 < argc) {
      show = std::strtoull(argv[++i], nullptr, 10);
    } else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "sluice inspect: unknown option '%s'\n\n%s", argv[i], kInspectUsage);
      return 2;
    } else {
      files.emplace_back(a);
    }
  }
  if (files.empty()) {
    std::fputs(kInspectUsage, stderr);
    return 2;
  }
  int status = 0;
  for (const std::string& path : files) {
    try {
      if (remote::is_remote(path)) {
        throw Error(path + ": a URL; inspect reads local files and folders (a pipeline reads URLs: sluice peek "
                    "PIPELINE.lua shows its first samples), so copy it here first");
      }
      std::error_code ec;
      if (std::filesystem::is_directory(path, ec)) {
        if (is_written_dataset(path)) {
          inspect_dataset(path);
          continue;
        }
        inspect_folder(path);
        continue;
      }
      switch (detect(path)) {
        case Format::tfrecord: inspect_tfrecord(path, show); break;
        case Format::tar: inspect_tar(path, show); break;
        case Format::tar_gz: inspect_tar_gz(path, show); break;
        case Format::npy: inspect_npy(path); break;
        case Format::npz: inspect_npz(path); break;
        case Format::parquet: std::fputs(ParquetFile(path).describe().c_str(), stdout); break;
        case Format::jsonl: inspect_jsonl(path, show); break;
        case Format::megatron: inspect_megatron(path, show); break;
        case Format::file: inspect_file(path); break;
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "sluice inspect: %s\n", e.what());
      status = 1;
    }
  }
  return status;
}

int index_command(int argc, char** argv) {
  std::string index_dir;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a == "-h" || a == "--help") {
      std::fputs(kIndexUsage, stdout);
      return 0;
    }
    if (a == "--index-dir" && i + 1 < argc) {
      index_dir = argv[++i];
    } else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "sluice index: unknown option '%s'\n\n%s", argv[i], kIndexUsage);
      return 2;
    } else {
      files.emplace_back(a);
    }
  }
  if (files.empty()) {
    std::fputs(kIndexUsage, stderr);
    return 2;
  }
  int status = 0;
  for (const std::string& path : files) {
    try {
      if (path.find(".jsonl") != std::string::npos || path.find(".ndjson") != std::string::npos) {
        const JsonlSource source({path}, JsonlOptions{.index_dir = index_dir});
        std::printf("%s: %llu line%s -> %s\n", path.c_str(), static_cast<unsigned long long>(source.size()),
                    source.size() == 1 ? "" : "s", source.files()[0] == path ? "its index" : ("its index and " + source.files()[0]).c_str());
        continue;
      }
      switch (detect(path)) {
        case Format::tfrecord:
        case Format::file: break;
        case Format::tar: {
          if (!index_dir.empty())
            throw Error(path + ": a tar's index is read only beside its shard (FILE.tar.idx); leave --index-dir out");
          const TarIndex index = scan_tar(path);
          const std::string out = tar_index_path(path);
          write_tar_index(out, index);
          std::printf("%s: %zu samples -> %s\n", path.c_str(), index.samples.size(), out.c_str());
          continue;
        }
        case Format::tar_gz:
          throw Error(path + " is a gzip-compressed tar: it is streamed, not read by index; decompress it to a plain "
                      ".tar to index it");
        case Format::parquet: throw Error(path + " is a Parquet file: it is read by row group from its footer and needs no index");
        default:
          throw Error(path + " is neither TFRecord, WebDataset tar nor JSON lines: sluice index builds the indexes of "
                      "those three");
      }
      TFRecordIndex index;
      try {
        index = scan_tfrecord(path);
      } catch (const Error& e) {
        throw Error(std::string(e.what()) + " (sluice index builds the indexes of TFRecord, tar and JSON lines files; "
                    "is this one of them?)");
      }
      const std::string out = tfrecord_index_path(path, index_dir);
      write_tfrecord_index(out, index);
      std::printf("%s: %llu records -> %s\n", path.c_str(),
                  static_cast<unsigned long long>(index.records()), out.c_str());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "sluice index: %s\n", e.what());
      status = 1;
    }
  }
  return status;
}

}  // namespace sluice::cli
