// Internal: SentencePiece unigram encoding without the library's per-call
// costs (a protobuf result per text, a string per piece, offsets nobody
// reads), for tokenizer.cpp.
//
// What it reproduces, bit for bit: libsentencepiece 0.1.97's
// SentencePieceProcessor::Encode(text, &ids) for a unigram model: the
// normalizer (the model's precompiled character map, a darts-clone double
// array read as the library reads it; dummy prefix, extra whitespace
// removal, whitespace escaping, whitespace as suffix; malformed UTF-8 as
// U+FFFD one byte at a time), the optimized Viterbi (its float and double
// arithmetic and its tie-breaking: the first best path found wins), unknown
// pieces merged, or split into byte pieces with byte fallback.
//
// What it declines (from_model returns nullptr, the library encodes): models
// of another type (BPE, word, char), user-defined symbols, pieces holding a
// NUL byte, pieces of a type the format does not define. encode() returns
// false for a text holding a NUL byte (the library's double array follows
// empty units on NUL), longer than 512 MiB, or whose normalized form passes
// INT32_MAX bytes (a character map may expand a character tenfold); the
// library encodes those. Scratch past 16 MiB is freed after the text. tokenizer.cpp also checks every model against the library on
// a set of probe texts at load and keeps the library if one differs, so a
// libsentencepiece that encodes differently is never silently diverged from.
//
// Errors: from_model throws sluice::Error on a model whose bytes are not a
// ModelProto (the library has already loaded it, so that is not expected).
// Thread safety: encode() is const and keeps its scratch per thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::text::detail {

class UnigramEncoder {
 public:
  // The encoder of the serialized ModelProto `model`, or nullptr (*why set)
  // for a model it does not reproduce.
  static std::unique_ptr<UnigramEncoder> from_model(std::string_view model, std::string* why);

  // The ids of `text` into *ids (cleared first); false (ids unspecified) for
  // a text it leaves to the library.
  bool encode(std::string_view text, std::vector<std::int32_t>* ids) const;

 private:
  struct Unit {  // one slot of the vocabulary's double array
    std::int32_t base = 0;
    std::int32_t check = -1;  // the parent slot; -1 free
    std::int32_t id = -1;     // the piece ending here, -1 none (or unused)
  };
  void normalize(std::string_view input, std::string& out) const;
  std::pair<std::string_view, std::size_t> normalize_prefix(std::string_view input) const;
  void build_trie(const std::vector<std::pair<std::string, std::int32_t>>& pieces);

  // Normalizer.
  std::vector<std::uint32_t> units_;  // the precompiled character map's double array
  std::string replacements_;          // its NUL-terminated replacements
  bool add_dummy_prefix_ = true, remove_extra_whitespaces_ = true, escape_whitespaces_ = true;
  bool whitespace_as_suffix_ = false;
  // Model.
  std::vector<Unit> trie_;
  std::vector<float> scores_;
  float unk_score_ = 0;
  std::int32_t unk_id_ = 0;
  bool byte_fallback_ = false;
  std::int32_t byte_ids_[256] = {};
};

}  // namespace sluice::text::detail
