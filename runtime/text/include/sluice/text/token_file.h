// sluice/text/token_file.h: token corpora on disk, memory-mapped, as documents.
//
// Two layouts on disk (and from_documents, token ids in memory), one
// TokenCorpus over any number of files (documents numbered
// across files in the order given):
//   flat      a file of little-endian uint16 or uint32 token ids (nanoGPT's
//             train.bin). Documents end at each `eos` token (kept, as the
//             document's last token); tokens after the last EOS form one more
//             document. Without an `eos` the whole file is one document.
//   megatron  a Megatron-LM indexed dataset, PREFIX.bin + PREFIX.idx (the
//             MMIDIDX format of MMapIndexedDataset / megatron.core
//             IndexedDataset): a document is the sequences its document
//             indices group (one each, unless preprocessed with
//             --split-sentences), stored contiguously in .bin; the
//             token type comes from the index. A path ending in .bin or .idx
//             whose sibling .idx exists, or a prefix with both files, is read
//             this way.
//
// Errors: TokenCorpus::open throws sluice::Error naming the file: a file whose
// length is not a multiple of the token size, an .idx that is truncated, has
// a bad magic or version or an unsupported type, sequences outside the .bin,
// document indices that do not run from 0 to the sequence count, a document
// whose sequences are not contiguous, a type that disagrees with the one
// asked for, a flat file without a dtype, a token id at or above
// `vocab_size` (when given; checked for every token at open, with its offset).
//
// Lifetime and fork: the mappings are shared and read-only; a TokenCorpus
// holds no descriptors (each is closed once mapped), so it crosses fork().
// Thread safety: immutable after open(); const methods are reentrant
// (origin() calls CorpusOptions::text_origin, which must be too).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace sluice::text {

enum class TokenType { uint16, uint32 };

// "uint16" / "uint32" ("int32", Megatron's name for its 4-byte ids, reads
// as uint32: the ids are never negative), or nullopt.
std::optional<TokenType> parse_token_type(const std::string& name);
const char* name_of(TokenType type);

struct CorpusOptions {
  // Flat files: required (the file does not say; a uint32 file read as
  // uint16 is all wrong ids). Megatron files: the index's when absent, else
  // it must agree with it.
  std::optional<TokenType> dtype = std::nullopt;
  std::optional<std::uint32_t> eos = std::nullopt;  // flat files: the document separator
  std::uint64_t vocab_size = 0;         // 0: ids are not checked
  // Text tokenized at load: where document d's text lies ("docs.jsonl: line
  // 12"; "" when unknown), which origin() names besides the token cache's
  // file. Called from the thread that calls origin(); must not throw and
  // must be safe to call from several threads (open_megatron keeps it;
  // open() does not take it).
  std::function<std::string(std::uint64_t d)> text_origin = {};
};

// A document: `length` tokens of file `file` from token `begin`.
struct Document {
  std::uint32_t file;
  std::uint64_t begin;
  std::uint64_t length;
};

class TokenCorpus {
 public:
  struct File {
    std::string path;                      // the token data (.bin for Megatron)
    TokenType type;
    std::shared_ptr<const void> mapping;   // keeps `data` mapped
    const void* data = nullptr;
    std::uint64_t tokens = 0;
  };

  static std::shared_ptr<const TokenCorpus> open(const std::vector<std::string>& paths,
                                                 const CorpusOptions& options);
  // A file as open() takes it (idx ""), or a Megatron-LM dataset's .bin at
  // `path` with its index at `idx`, wherever each lies (a node cache names
  // the two objects of a remote dataset apart).
  struct Input {
    std::string path;
    std::string idx = {};
  };
  static std::shared_ptr<const TokenCorpus> open(const std::vector<Input>& inputs, const CorpusOptions& options);
  // A Megatron-LM dataset whose two files are named otherwise than PREFIX.idx
  // and PREFIX.bin.
  static std::shared_ptr<const TokenCorpus> open_megatron(const std::string& idx_path, const std::string& bin_path,
                                                          const CorpusOptions& options);
  // A corpus held in memory (text tokenized at load): documents of the given
  // lengths, one after another in `tokens`; `name` stands for the file.
  static std::shared_ptr<const TokenCorpus> from_documents(const std::string& name, std::vector<std::uint32_t> tokens,
                                                           const std::vector<std::uint64_t>& lengths);

  std::uint64_t documents() const { return documents_.size(); }
  const Document& document(std::uint64_t d) const { return documents_[d]; }
  std::uint64_t tokens() const { return tokens_; }  // in all documents
  const std::vector<File>& files() const { return files_; }
  const std::string& file(std::uint32_t f) const { return files_[f].path; }
  TokenType dtype(std::uint32_t f) const { return files_[f].type; }

  // Token `i` of document `d` (i < its length).
  std::uint32_t token(std::uint64_t d, std::uint64_t i) const {
    const Document& doc = documents_[d];
    const File& f = files_[doc.file];
    const std::uint64_t at = doc.begin + i;
    return f.type == TokenType::uint16 ? static_cast<const std::uint16_t*>(f.data)[at]
                                       : static_cast<const std::uint32_t*>(f.data)[at];
  }
  // Tokens [begin, begin + count) of document `d`, widened into out[0, count).
  void read(std::uint64_t d, std::uint64_t begin, std::uint64_t count, std::int64_t* out) const;
  // Where token `token` of document `d` lies: "FILE token T", or for text
  // tokenized at load "TEXT: line L, token T (CACHE.bin token T')".
  std::string origin(std::uint64_t d, std::uint64_t token = 0) const;

 private:
  TokenCorpus() = default;
  void add_flat(const std::string& path, const CorpusOptions& options);
  void add_megatron(const std::string& idx_path, const std::string& bin_path, const CorpusOptions& options);
  void check_vocab(std::uint32_t f, std::uint64_t begin, std::uint64_t count, std::uint64_t vocab) const;

  std::vector<File> files_;
  std::vector<Document> documents_;
  std::function<std::string(std::uint64_t d)> text_origin_;
  std::uint64_t tokens_ = 0;
};

}  // namespace sluice::text
