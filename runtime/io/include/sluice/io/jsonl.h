// sluice/io/jsonl.h: JSON lines (one JSON object per line) with random access
// through an offset index; plain, gzip or zstd.
//
// A sample is one non-blank line (a UTF-8 byte-order mark before a file's
// first line is not part of it). decode() parses it and hands out fields:
//   - `field` (default "text"; "" selects none): the selected value, named
//     as `field` is written. A dotted name ("meta.text") is a top-level key of that exact
//     name when the object has one, and otherwise a path into nested objects.
//   - every top-level key of the object, under its own name.
// A string value arrives unescaped as its UTF-8 bytes (what a tokenizer
// wants); any other value (number, true, false, null, array, object) as its
// JSON text. A line that is not a JSON object, is malformed (syntax, a control
// character in a string, bytes that are not UTF-8 in a string, a bad \u
// escape, nesting deeper than 256), lacks `field`, or (field_is_text) has a
// `field` that is not a string throws sluice::Error "FILE: line N: why", N
// counting from 1 in the decompressed text.
//
// Random access. The index of a file lists each sample's byte offset, length
// and line number in the plain text. It is kept in a sidecar, FILE.idx beside
// the file or, with index_dir, in that folder (the naming of TFRecord
// sidecars), loaded when the text's size and modification time are the ones
// it was built for, and otherwise built by one pass and written atomically.
// Compressed files (gzip, one or more members; zstd, one or more frames;
// recognised by their magic bytes, whatever the name) are decompressed ONCE
// into a plain copy, FILE.plain (same place as the index), and read at random
// offsets there: reads cost what plain JSON lines cost, at the price of disk
// space for the decompressed text. (Restart points inside gzip/zstd would keep
// the disk at the compressed size but make every random read decompress from
// its restart point; the copy was chosen because a shuffled epoch reads each
// line once in random order.) The copy is reused while it is newer than the
// compressed file. A folder that cannot be written (and no index_dir) is an
// error for a compressed file; for a plain file the index stays in memory.
//
// A compressed file that ends early or is corrupt throws sluice::Error naming
// the file, the compressed byte and how many bytes it decompressed; with
// on_error = skip, part of it is kept (noted in index_skips()) in a copy named
// FILE.plain.cut, which is rebuilt on every open so that the damage stays
// visible: a file cut short keeps its complete lines; a corrupt one only the
// lines of its members (gzip) or frames (zstd) that passed their check, since
// corrupt input may decompress to garbage well before the error shows. A last line with no newline is a sample (a cut plain file's
// last line then fails to parse, naming its line).
//
// Processes (ranks, runs) that open one file at once each build what is
// missing under a name of their own and rename it into place; rename is
// atomic, every build of one file has the same bytes, and an index older than
// the copy it describes is not used, so each process reads a whole, matching
// pair (tests/io/jsonl_test.cpp races six processes). `sluice index` builds
// them ahead of a run.
//
// Thread safety: JsonlSource is immutable after construction. It holds no
// descriptors, so it may cross fork().
#pragma once

#include "sluice/export.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sluice/io/record_source.h"
#include "sluice/io/skip_log.h"

namespace sluice::io {

struct SLUICE_API JsonlOptions {
  std::string field = "text";  // the value every line must have; "" = none (the keys only)
  bool field_is_text = false;  // the value must be a JSON string (a document to tokenize): a number,
                               // null, array or object there is the line's error, not its JSON text
  std::string index_dir;       // where sidecars and decompressed copies live; empty = beside each file
  bool write_index = true;     // write the sidecar after scanning
  // fail: a corrupt compressed file throws. skip: its good lines are kept.
  OnError on_error = OnError::fail;
};

// Lines of one plain text: sample i spans [offsets[i], offsets[i] + lengths[i])
// (the newline and a '\r' before it excluded) and is line lines[i] (from 1).
struct SLUICE_API JsonlIndex {
  std::uint64_t text_size = 0;  // bytes of the plain text indexed
  std::int64_t text_mtime_ns = 0;  // its modification time when indexed (0: unknown, never loaded)
  // A decompressed copy's: the compressed file's size and modification time
  // it was made from (0 for a plain file), so that a file replaced by another
  // with the same or an older time (cp -p, rsync -a, tar x) is decompressed
  // again rather than read from the old copy.
  std::uint64_t source_size = 0;
  std::int64_t source_mtime_ns = 0;
  std::vector<std::uint64_t> offsets;
  std::vector<std::uint32_t> lengths;
  std::vector<std::uint64_t> lines;
  std::uint64_t records() const { return offsets.size(); }
};

// Indexes a plain text file: every line with a non-blank character. Lines over
// 4 GiB throw sluice::Error naming the file and line.
SLUICE_API JsonlIndex scan_jsonl(const std::string& plain_path);

// Writes the sidecar atomically (temp file + rename). Throws sluice::Error.
SLUICE_API void write_jsonl_index(const std::string& index_path, const JsonlIndex& index);

// Reads a sidecar; nullopt when absent, or when `text`'s size or modification
// time differs from the ones it was built for (an edit in place, even one that
// keeps the size, or a copy over it with an older time), or, given `source`
// (the compressed file `text` was decompressed from), when the source's do.
SLUICE_API std::optional<JsonlIndex> load_jsonl_index(const std::string& index_path, const std::string& text,
                                                      const std::string& source = "");

class SLUICE_API JsonlSource final : public RecordSource {
 public:
  // Decompresses (or reuses copies of) compressed files and indexes every
  // file. Throws sluice::Error naming the file.
  explicit JsonlSource(std::vector<std::string> files, JsonlOptions options = {});

  std::string_view format() const override { return "jsonl"; }
  std::uint64_t size() const override { return starts_.back(); }
  // The files read: the plain copies of compressed files.
  const std::vector<std::string>& files() const override { return plain_; }
  SampleLocation locate(std::uint64_t id) const override;
  // Fields point into `raw` or into out.storage. Throws "FILE: line N: why".
  void decode(const SampleLocation& where, std::span<const std::byte> raw,
              Sample& out) const override;

  // The files as given (samples' paths name these).
  const std::vector<std::string>& sources() const { return files_; }
  std::uint64_t records_in(std::size_t file) const { return indexes_[file].records(); }
  // Where file `file` + line: "a.jsonl.gz: line 7".
  std::string where(std::uint64_t id) const;
  const SkipLog& index_skips() const { return index_skips_; }
  // The indexes that could not be saved (a full or read-only folder), each
  // "PATH: why": those files are indexed again, from their text, next time.
  const std::vector<std::string>& unsaved_indexes() const { return unsaved_indexes_; }

 private:
  std::vector<std::string> files_;
  std::vector<std::string> plain_;
  JsonlOptions options_;
  std::vector<std::string> path_;  // options_.field split at '.'
  std::vector<JsonlIndex> indexes_;
  std::vector<std::uint64_t> starts_;
  SkipLog index_skips_;
  std::vector<std::string> unsaved_indexes_;
};

}  // namespace sluice::io
