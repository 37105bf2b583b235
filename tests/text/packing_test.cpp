// Packing: concat covers every token exactly once per epoch; best_fit keeps
// documents whole and pads exactly what best-fit decreasing promises.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <set>

#include "sluice/error.h"
#include "sluice/text/packing.h"
#include "io_test_support.h"
#include "text_test_support.h"

using namespace sluice::text;
using namespace sluice::text::test;
using sluice::io::test::TempDir;

namespace {

struct Where {
  std::uint64_t doc, offset;
};

// token id -> (document, offset): ids are unique but for EOS (0).
std::map<std::int64_t, Where> locate(const std::vector<std::vector<std::uint32_t>>& docs) {
  std::map<std::int64_t, Where> at;
  for (std::uint64_t d = 0; d < docs.size(); ++d)
    for (std::uint64_t i = 0; i < docs[d].size(); ++i)
      if (docs[d][i] != 0) at[docs[d][i]] = {d, i};
  return at;
}

// The reference: best-fit decreasing per window, scanning every row.
struct RefPiece {
  std::uint64_t doc, begin, length;
};
std::vector<std::vector<RefPiece>> reference_best_fit(const std::vector<std::uint64_t>& lengths, std::uint64_t L,
                                                      std::uint64_t window) {
  std::vector<std::vector<RefPiece>> rows;
  for (std::uint64_t first = 0; first < lengths.size(); first += window) {
    std::vector<RefPiece> pieces;
    for (std::uint64_t d = first; d < std::min<std::uint64_t>(lengths.size(), first + window); ++d)
      for (std::uint64_t b = 0; b < lengths[d]; b += L) pieces.push_back({d, b, std::min(L, lengths[d] - b)});
    std::stable_sort(pieces.begin(), pieces.end(), [](const RefPiece& a, const RefPiece& b) { return a.length > b.length; });
    std::vector<std::vector<RefPiece>> bins;
    std::vector<std::uint64_t> room;
    for (const RefPiece& p : pieces) {
      std::size_t best = bins.size();
      for (std::size_t b = 0; b < bins.size(); ++b)
        if (room[b] >= p.length && (best == bins.size() || room[b] < room[best])) best = b;
      if (best == bins.size()) {
        bins.emplace_back();
        room.push_back(L);
      }
      bins[best].push_back(p);
      room[best] -= p.length;
    }
    rows.insert(rows.end(), bins.begin(), bins.end());
  }
  return rows;
}

}  // namespace

TEST_CASE("concat: every token is an input exactly once per epoch, and segments follow the EOS boundaries") {
  TempDir dir;
  const auto lens = lengths(300, 1, 90, 7);
  const auto docs = make_documents(lens, true);
  write_tokens(dir.file("c.bin"), docs, true);
  auto corpus = TokenCorpus::open({dir.file("c.bin")}, {.dtype = TokenType::uint32, .eos = 0});
  REQUIRE(corpus->documents() == docs.size());
  const auto at = locate(docs);
  for (std::uint32_t L : {1u, 7u, 64u, 200u}) {
    Packing packing(corpus, {.seq_len = L, .mode = PackMode::concat});
    const std::uint64_t T = corpus->tokens();
    REQUIRE(packing.rows() == (T - 1) / L);
    REQUIRE(packing.padding_tokens() == 0);
    REQUIRE(packing.tail_tokens() == T - packing.rows() * L);
    // The stream, rebuilt from the rows, is the corpus: inputs once each, in order.
    std::vector<std::int64_t> stream;
    for (const auto& d : docs) stream.insert(stream.end(), d.begin(), d.end());
    for (std::uint64_t r = 0; r < packing.rows(); ++r) {
      const RowCopy row = fill_row(packing, 0, r);
      for (std::uint32_t i = 0; i < L; ++i) {
        REQUIRE(row.tokens[i] == stream[r * L + i]);
        REQUIRE(row.targets[i] == stream[r * L + i + 1]);
        REQUIRE(row.loss_mask[i] == 1.0f);
        // A new segment exactly where a document starts (or the row does).
        const bool doc_start = i == 0 || row.tokens[i - 1] == 0;
        if (i > 0) REQUIRE(row.segment_ids[i] == row.segment_ids[i - 1] + (doc_start ? 1 : 0));
        else REQUIRE(row.segment_ids[i] == 1);
        if (doc_start) REQUIRE(row.positions[i] == 0);
        else REQUIRE(row.positions[i] == row.positions[i - 1] + 1);
        // positions agree with the token's place in its document, within the row
        if (row.tokens[i] != 0 && doc_start && i > 0) REQUIRE(at.at(row.tokens[i]).offset == 0);
      }
      // The row's window of L + 1 tokens (nanoGPT's x and y) is the same stretch of the stream.
      std::vector<std::int64_t> window(L + 1);
      packing.read_window(r, window.data());
      REQUIRE(window == std::vector<std::int64_t>(stream.begin() + static_cast<std::ptrdiff_t>(r * L),
                                                  stream.begin() + static_cast<std::ptrdiff_t>(r * L + L + 1)));
    }
  }
}

TEST_CASE("concat over a Megatron index and several files is the same stream") {
  TempDir dir;
  const auto docs = make_documents(lengths(50, 1, 40, 3), true);
  write_megatron(dir.file("m"), docs, false);
  const std::vector<std::vector<std::uint32_t>> first(docs.begin(), docs.begin() + 20), rest(docs.begin() + 20, docs.end());
  write_tokens(dir.file("a.bin"), first, false);
  write_tokens(dir.file("b.bin"), rest, false);
  Packing m(TokenCorpus::open({dir.file("m")}, {}), {.seq_len = 16});
  Packing f(TokenCorpus::open({dir.file("a.bin"), dir.file("b.bin")}, {.dtype = TokenType::uint16, .eos = 0}), {.seq_len = 16});
  REQUIRE(m.rows() == f.rows());
  for (std::uint64_t r = 0; r < m.rows(); ++r) {
    const RowCopy a = fill_row(m, 0, r), b = fill_row(f, 0, r);
    REQUIRE(a.tokens == b.tokens);
    REQUIRE(a.targets == b.targets);
    REQUIRE(a.segment_ids == b.segment_ids);
    REQUIRE(a.positions == b.positions);
  }
}

TEST_CASE("best_fit: documents stay whole unless longer than seq_len, padding as best-fit decreasing promises") {
  TempDir dir;
  const std::uint64_t L = 64;
  auto lens = lengths(500, 1, 100, 11);  // some longer than L: split
  const auto docs = make_documents(lens, true);
  write_tokens(dir.file("b.bin"), docs, true);
  auto corpus = TokenCorpus::open({dir.file("b.bin")}, {.dtype = TokenType::uint32, .eos = 0});
  for (std::uint32_t window : {1u, 8u, 64u, 1000u}) {
    Packing packing(corpus, {.seq_len = static_cast<std::uint32_t>(L), .mode = PackMode::best_fit, .window = window});
    const auto expected = reference_best_fit(lens, L, window);
    REQUIRE(packing.rows() == expected.size());
    REQUIRE(packing.padding_tokens() == expected.size() * L - corpus->tokens());
    std::uint64_t padding = 0;
    std::vector<std::uint64_t> seen(docs.size(), 0);
    for (std::uint64_t r = 0; r < packing.rows(); ++r) {
      const RowCopy row = fill_row(packing, 0, r);
      std::uint64_t i = 0;
      for (std::size_t k = 0; k < expected[r].size(); ++k) {
        const RefPiece& p = expected[r][k];
        for (std::uint64_t j = 0; j < p.length; ++j, ++i) {
          REQUIRE(row.tokens[i] == docs[p.doc][p.begin + j]);
          REQUIRE(row.segment_ids[i] == static_cast<std::int32_t>(k + 1));
          REQUIRE(row.positions[i] == static_cast<std::int32_t>(j));
          const bool has_next = p.begin + j + 1 < docs[p.doc].size();
          REQUIRE(row.loss_mask[i] == (has_next ? 1.0f : 0.0f));
          if (has_next) REQUIRE(row.targets[i] == docs[p.doc][p.begin + j + 1]);
        }
        seen[p.doc] += p.length;
        if (lens[p.doc] <= L) REQUIRE(p.length == lens[p.doc]);  // whole
      }
      for (; i < L; ++i, ++padding) {
        REQUIRE(row.segment_ids[i] == 0);
        REQUIRE(row.loss_mask[i] == 0.0f);
        REQUIRE(row.tokens[i] == 0);
      }
    }
    REQUIRE(padding == packing.padding_tokens());
    for (std::size_t d = 0; d < docs.size(); ++d) REQUIRE(seen[d] == lens[d]);
  }
}

TEST_CASE("best_fit pads less than one document per row") {
  TempDir dir;
  const auto lens = lengths(2000, 1, 200, 5);
  write_tokens(dir.file("p.bin"), make_documents(lens, true), false);
  auto corpus = TokenCorpus::open({dir.file("p.bin")}, {.dtype = TokenType::uint16, .eos = 0});
  Packing packing(corpus, {.seq_len = 256, .mode = PackMode::best_fit, .window = 64});
  std::uint64_t naive_rows = lens.size();  // pad-to-length: one row per document
  const double naive = 1.0 - static_cast<double>(corpus->tokens()) / static_cast<double>(naive_rows * 256);
  const double fit = static_cast<double>(packing.padding_tokens()) / static_cast<double>(packing.rows() * 256);
  CAPTURE(naive, fit);
  REQUIRE(fit < naive / 4);
}

TEST_CASE("packing refuses a corpus too small for one row") {
  TempDir dir;
  write_tokens(dir.file("s.bin"), make_documents({3, 2}, true), false);
  auto corpus = TokenCorpus::open({dir.file("s.bin")}, {.dtype = TokenType::uint16, .eos = 0});
  REQUIRE_THROWS_WITH(Packing(corpus, {.seq_len = 5}), Catch::Contains("fewer than one row"));
  REQUIRE(Packing(corpus, {.seq_len = 4}).rows() == 1);
}
