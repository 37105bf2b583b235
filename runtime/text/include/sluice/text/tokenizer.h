// sluice/text/tokenizer.h: SentencePiece models (unigram and BPE, byte
// fallback included) through Debian's libsentencepiece, the library
// python3-sentencepiece wraps: for the same model file and text, encode()
// gives the ids SentencePieceProcessor.encode(text) gives in Python.
//
// Unigram models are encoded by Sluice's own encoder (runtime/text/src/
// unigram_encoder.h), the library's algorithm without its per-call protobuf
// and allocations: the same ids, checked against the library on probe texts
// at load (the library encodes where they differ, and for BPE models, models
// with user-defined symbols, and texts holding a NUL byte).
//
// A model is loaded once per process that encodes (each worker, lazily; see
// sluice.sentencepiece in scripting/lua/sluice.lua) and encodes any bytes: the
// text may come from any source (files, tar members, JSON lines, ...).
// Invalid UTF-8 is handled as SentencePiece does (U+FFFD, or bytes with byte
// fallback), never an error.
//
// Errors: open() throws sluice::Error naming the model file and
// SentencePiece's reason. encode() throws only std::bad_alloc.
// Thread safety: encode() is const and may run concurrently; the object holds
// no descriptors or threads, so it may cross fork().
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::text {

class SentencePiece {
 public:
  // library_only: every text through libsentencepiece (for comparisons).
  static std::shared_ptr<const SentencePiece> open(const std::string& model_path, bool library_only = false);
  ~SentencePiece();

  // The ids of `text`, appended to *ids (cleared first).
  void encode(std::string_view text, std::vector<std::int32_t>* ids) const;
  std::uint32_t vocab_size() const;
  std::int32_t eos_id() const;  // -1 if the model has none
  std::int32_t bos_id() const;
  std::int32_t pad_id() const;
  std::int32_t unk_id() const;
  const std::string& path() const { return path_; }
  // Which encoder runs: "sluice unigram", or "libsentencepiece" with the
  // reason Sluice's does not.
  const std::string& encoder() const;

 private:
  SentencePiece() = default;
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string path_;
};

}  // namespace sluice::text
