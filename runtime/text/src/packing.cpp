#include "sluice/text/packing.h"

#include <algorithm>
#include <numeric>
#include <set>
#include <utility>

#include "sluice/error.h"

namespace sluice::text {

std::optional<PackMode> parse_pack_mode(const std::string& name) {
  if (name == "concat") return PackMode::concat;
  if (name == "best_fit") return PackMode::best_fit;
  return std::nullopt;
}

Packing::Packing(std::shared_ptr<const TokenCorpus> corpus, const PackOptions& options)
    : corpus_(std::move(corpus)), options_(options) {
  if (options_.seq_len == 0) throw Error("pack: seq_len must be positive");
  if (options_.mode == PackMode::best_fit && options_.window == 0) throw Error("pack: window must be positive");
  const std::uint64_t L = options_.seq_len;
  const std::uint64_t T = corpus_->tokens();
  if (options_.mode == PackMode::concat) {
    starts_.resize(corpus_->documents() + 1);
    std::uint64_t at = 0;
    for (std::uint64_t d = 0; d < corpus_->documents(); ++d) {
      starts_[d] = at;
      at += corpus_->document(d).length;
    }
    starts_.back() = at;
    rows_ = T == 0 ? 0 : (T - 1) / L;
    if (rows_ == 0)
      throw Error("pack: the corpus holds " + std::to_string(T) + " tokens, fewer than one row of seq_len + 1 = " +
                  std::to_string(L + 1) + " (concat)");
  } else {
    plan_best_fit();
    if (rows_ == 0) throw Error("pack: the corpus holds no tokens");
  }
}

// Best-fit decreasing per window. Open rows are kept in a set ordered by
// (room left, row), so the row with the least room that fits a piece is
// lower_bound(piece length); a full row leaves the set.
void Packing::plan_best_fit() {
  const std::uint64_t L = options_.seq_len;
  const std::uint64_t D = corpus_->documents();
  std::vector<Piece> window_pieces;
  std::vector<std::uint32_t> order;
  std::vector<std::vector<std::uint32_t>> bins;  // pieces of each row of the window, in placement order
  std::vector<std::uint64_t> room;
  row_begin_.push_back(0);
  for (std::uint64_t first = 0; first < D; first += options_.window) {
    const std::uint64_t last = std::min<std::uint64_t>(D, first + options_.window);
    window_pieces.clear();
    for (std::uint64_t d = first; d < last; ++d) {
      const std::uint64_t length = corpus_->document(d).length;
      for (std::uint64_t b = 0; b < length; b += L)
        window_pieces.push_back({d, b, static_cast<std::uint32_t>(std::min<std::uint64_t>(L, length - b))});
    }
    order.resize(window_pieces.size());
    std::iota(order.begin(), order.end(), 0u);
    std::stable_sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
      return window_pieces[a].length > window_pieces[b].length;
    });
    bins.clear();
    room.clear();
    std::set<std::pair<std::uint64_t, std::uint32_t>> open;  // (room, row)
    for (std::uint32_t k : order) {
      const std::uint64_t need = window_pieces[k].length;
      auto it = open.lower_bound({need, 0});
      std::uint32_t bin;
      if (it == open.end()) {
        bin = static_cast<std::uint32_t>(bins.size());
        bins.emplace_back();
        room.push_back(L);
      } else {
        bin = it->second;
        open.erase(it);
      }
      bins[bin].push_back(k);
      room[bin] -= need;
      if (room[bin] > 0) open.insert({room[bin], bin});
    }
    for (const auto& bin : bins) {
      for (std::uint32_t k : bin) pieces_.push_back(window_pieces[k]);
      row_begin_.push_back(pieces_.size());
    }
  }
  rows_ = row_begin_.size() - 1;
}

std::uint64_t Packing::padding_tokens() const {
  return options_.mode == PackMode::concat ? 0 : rows_ * options_.seq_len - corpus_->tokens();
}

std::uint64_t Packing::tail_tokens() const {
  return options_.mode == PackMode::concat ? corpus_->tokens() - rows_ * options_.seq_len : 0;
}

void Packing::fill(std::uint64_t, std::uint64_t row, const PackedRow& out) const {
  if (options_.mode == PackMode::concat) fill_concat(row, out);
  else fill_best_fit(row, out);
}

void Packing::fill_concat(std::uint64_t row, const PackedRow& out) const {
  const std::uint64_t L = options_.seq_len;
  const std::uint64_t at = row * L;
  std::uint64_t d = static_cast<std::uint64_t>(std::upper_bound(starts_.begin(), starts_.end(), at) - starts_.begin()) - 1;
  std::uint64_t offset = at - starts_[d];
  std::int32_t segment = 1;
  for (std::uint64_t i = 0; i < L; ++segment) {
    const std::uint64_t length = corpus_->document(d).length;
    const std::uint64_t n = std::min(L - i, length - offset);
    corpus_->read(d, offset, n, out.tokens + i);
    for (std::uint64_t j = 0; j < n; ++j) {
      out.segment_ids[i + j] = segment;
      out.positions[i + j] = static_cast<std::int32_t>(j);
    }
    i += n;
    offset += n;
    if (offset == length) ++d, offset = 0;
  }
  std::copy(out.tokens + 1, out.tokens + L, out.targets);
  out.targets[L - 1] = corpus_->token(d, offset);  // stream position (row + 1) * L < T
  std::fill(out.loss_mask, out.loss_mask + L, 1.0f);
}

void Packing::read_window(std::uint64_t row, std::int64_t* out) const {
  const std::uint64_t L = options_.seq_len;
  const std::uint64_t at = row * L;
  std::uint64_t d = static_cast<std::uint64_t>(std::upper_bound(starts_.begin(), starts_.end(), at) - starts_.begin()) - 1;
  std::uint64_t offset = at - starts_[d];
  for (std::uint64_t i = 0; i < L + 1; ++d, offset = 0) {
    const std::uint64_t n = std::min(L + 1 - i, corpus_->document(d).length - offset);
    corpus_->read(d, offset, n, out + i);
    i += n;
  }
}

void Packing::fill_best_fit(std::uint64_t row, const PackedRow& out) const {
  const std::uint64_t L = options_.seq_len;
  std::uint64_t i = 0;
  std::int32_t segment = 1;
  for (std::uint64_t k = row_begin_[row]; k < row_begin_[row + 1]; ++k, ++segment) {
    const Piece& piece = pieces_[k];
    const std::uint64_t n = piece.length;
    corpus_->read(piece.document, piece.begin, n, out.tokens + i);
    std::copy(out.tokens + i + 1, out.tokens + i + n, out.targets + i);
    for (std::uint64_t j = 0; j < n; ++j) {
      out.segment_ids[i + j] = segment;
      out.positions[i + j] = static_cast<std::int32_t>(j);
      out.loss_mask[i + j] = 1.0f;
    }
    const std::uint64_t next = piece.begin + n;
    if (next < corpus_->document(piece.document).length) {
      out.targets[i + n - 1] = corpus_->token(piece.document, next);
    } else {
      out.targets[i + n - 1] = 0;
      out.loss_mask[i + n - 1] = 0.0f;
    }
    i += n;
  }
  std::fill(out.tokens + i, out.tokens + L, 0);
  std::fill(out.targets + i, out.targets + L, 0);
  std::fill(out.segment_ids + i, out.segment_ids + L, 0);
  std::fill(out.positions + i, out.positions + L, 0);
  std::fill(out.loss_mask + i, out.loss_mask + L, 0.0f);
}

std::string Packing::origin(std::uint64_t, std::uint64_t row) const {
  if (row >= rows_) return "";
  if (options_.mode == PackMode::best_fit) {
    const Piece& piece = pieces_[row_begin_[row]];
    return corpus_->origin(piece.document, piece.begin);
  }
  const std::uint64_t at = row * options_.seq_len;
  const std::uint64_t d =
      static_cast<std::uint64_t>(std::upper_bound(starts_.begin(), starts_.end(), at) - starts_.begin()) - 1;
  return corpus_->origin(d, at - starts_[d]);
}

}  // namespace sluice::text
