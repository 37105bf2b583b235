// sluice/text/packing.h: documents packed into fixed rows of seq_len tokens,
// as the fields a training step uses directly.
//
// A packed row is a *sample*: rows are numbered [0, rows()) and row r is a
// pure function of (corpus, options, r), computed by whichever worker needs
// it. So packing never depends on the worker count, a crash, or a resume on
// another world size: the runtime's plan (sluice/plan.h) orders, shuffles and
// shards rows like any other samples.
//
// The fields of a row (each seq_len long; PackedRow points at them):
//   tokens       int64  the input ids
//   targets      int64  the id that follows each input (tokens shifted by one)
//   segment_ids  int32  1, 2, ... for the documents (pieces) of the row in order; 0 = padding
//   positions    int32  index within its segment: restarts at 0 at each document
//                       and at the row's start (what attention in the row sees)
//   loss_mask    float32 1 where targets[i] is to be learnt, 0 on padding and
//                       where a document ends inside the row with no next token
//
// Modes (documents taken in corpus order):
//   concat    the documents concatenated into one stream S of T tokens; row r
//             is tokens S[rL, rL + L), targets S[rL + 1, rL + L + 1): no
//             padding, loss_mask all 1, a document may span rows. rows() =
//             floor((T - 1) / L): every token of S but the last T - rows*L
//             (fewer than L + 1, the tail) is an input exactly once per epoch.
//   best_fit  documents grouped in windows of `window` consecutive documents;
//             a document longer than L is split into pieces of L (the last
//             shorter); within a window the pieces are placed longest first
//             (ties: earlier piece first) into the open row with the least
//             room that still fits them (ties: the earlier row), else a new
//             row: best-fit decreasing. So no document is cut unless longer
//             than L. Rows keep the order they were opened in, window after
//             window; a piece's targets are the next tokens of its document
//             (loss_mask 0 on its last position when the document ends there).
//             padding_tokens() = rows() * L - T.
//
// Errors: the constructor throws sluice::Error for seq_len 0 or a corpus too
// small for one row. Memory: concat keeps one offset per document; best_fit
// one entry per piece. Thread safety: immutable; fill() is reentrant.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sluice/text/token_file.h"

namespace sluice::text {

enum class PackMode { concat, best_fit };
std::optional<PackMode> parse_pack_mode(const std::string& name);

struct PackOptions {
  std::uint32_t seq_len = 2048;
  PackMode mode = PackMode::concat;
  std::uint32_t window = 64;  // best_fit: documents per window
};

// Where fill() writes one row: each pointer to seq_len elements.
struct PackedRow {
  std::int64_t* tokens;
  std::int64_t* targets;
  std::int32_t* segment_ids;
  std::int32_t* positions;
  float* loss_mask;
};

// What a pipeline samples from: rows of packed tokens. fill() may depend on
// the epoch (a mixture's schedule runs across epochs); a packing does not.
class PackedSource {
 public:
  virtual ~PackedSource() = default;
  virtual std::uint64_t rows() const = 0;
  virtual std::uint32_t seq_len() const = 0;
  virtual void fill(std::uint64_t epoch, std::uint64_t row, const PackedRow& out) const = 0;
  // "FILE token T" of the row's first token (for sluice peek).
  virtual std::string origin(std::uint64_t epoch, std::uint64_t row) const = 0;
};

class Packing : public PackedSource {
 public:
  Packing(std::shared_ptr<const TokenCorpus> corpus, const PackOptions& options);

  std::uint64_t rows() const override { return rows_; }
  std::uint32_t seq_len() const override { return options_.seq_len; }
  void fill(std::uint64_t epoch, std::uint64_t row, const PackedRow& out) const override;
  std::string origin(std::uint64_t epoch, std::uint64_t row) const override;

  const PackOptions& options() const { return options_; }
  const TokenCorpus& corpus() const { return *corpus_; }
  // concat: row `row`'s window of seq_len + 1 tokens of the stream (its
  // tokens and its last target; nanoGPT's x and y in one), into out.
  void read_window(std::uint64_t row, std::int64_t* out) const;
  std::uint64_t padding_tokens() const;  // over one epoch of rows
  std::uint64_t tail_tokens() const;     // concat: inputs left out at the end

  // best_fit: a piece of a document placed in a row.
  struct Piece {
    std::uint64_t document;
    std::uint64_t begin;
    std::uint32_t length;
  };

 private:
  void fill_concat(std::uint64_t row, const PackedRow& out) const;
  void fill_best_fit(std::uint64_t row, const PackedRow& out) const;
  void plan_best_fit();

  std::shared_ptr<const TokenCorpus> corpus_;
  PackOptions options_;
  std::uint64_t rows_ = 0;
  std::vector<std::uint64_t> starts_;  // concat: stream offset of each document, then T
  std::vector<Piece> pieces_;          // best_fit: row r is pieces_[row_begin_[r], row_begin_[r+1])
  std::vector<std::uint64_t> row_begin_;
};

}  // namespace sluice::text
