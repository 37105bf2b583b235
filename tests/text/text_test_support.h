// Helpers for the text tests: corpora with known token content written to
// files, and a packed row held in vectors. (Temporary folders: tests/io's
// TempDir.)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sluice/text/packing.h"

namespace sluice::text::test {

// Documents of the given lengths whose tokens are unique across the corpus:
// document d's tokens are consecutive ids from 1 (EOS = 0 is never one of
// them); with `eos`, each document's last token is replaced by 0. Returns the
// documents' tokens.
std::vector<std::vector<std::uint32_t>> make_documents(const std::vector<std::uint64_t>& lengths, bool eos);

// The documents concatenated, written as uint16 or uint32 tokens.
void write_tokens(const std::string& path, const std::vector<std::vector<std::uint32_t>>& docs, bool wide);

// A Megatron-LM .bin/.idx pair (version 1, uint16 = 8 or int32 = 4), one
// sequence per document, one document index entry per sequence plus 0.
// `sequences` are Megatron's sequences; `document_indices` groups them into
// documents (Megatron's layout: 0, first sequence of each next document, ...,
// the sequence count); empty = one document per sequence.
void write_megatron(const std::string& prefix, const std::vector<std::vector<std::uint32_t>>& sequences, bool wide,
                    std::vector<std::int64_t> document_indices = {});

// Document lengths drawn from a fixed generator: between lo and hi.
std::vector<std::uint64_t> lengths(std::size_t count, std::uint64_t lo, std::uint64_t hi, std::uint64_t seed);

struct RowCopy {
  std::vector<std::int64_t> tokens, targets;
  std::vector<std::int32_t> segment_ids, positions;
  std::vector<float> loss_mask;
  explicit RowCopy(std::uint32_t L) : tokens(L), targets(L), segment_ids(L), positions(L), loss_mask(L) {}
  PackedRow view() { return {tokens.data(), targets.data(), segment_ids.data(), positions.data(), loss_mask.data()}; }
};

RowCopy fill_row(const PackedSource& source, std::uint64_t epoch, std::uint64_t row);

}  // namespace sluice::text::test
