// sluice/text/token_cache.h: text tokenized once per node and kept, as a
// Megatron-LM indexed dataset (token_file.h reads it, memory-mapped), so a
// run over text neither holds the corpus's ids in memory nor tokenizes it
// again when the same text and model come back.
//
//   TokenCacheRequest request{.dir = cache_dir, .identity = "...", .documents = n, .threads = 8,
//                             .dtype = TokenType::uint16, .encode = ...};
//   TokenCacheResult r = tokenize_cached(request);   // r.idx, r.bin: open_megatron them
//
// Files, in DIR/tokens/, for KEY = 16 hex digits of XXH64(identity):
//   KEY.bin, KEY.idx   the ids of every document in order (encode's ids, then
//                      EOS) and a version 1 index, one sequence per document
//   KEY.lock           flock()ed exclusively by the one process tokenizing
//   KEY.part*, KEY.*.tmp  work in progress, or left by a crash (redone)
// `identity` must name everything the ids depend on (the text's files with
// their sizes and times, the field read, the model's bytes, EOS, dtype): a
// change makes another KEY, and a KEY's files are never rewritten.
//
// Guarantees: KEY.idx is renamed into place last, after KEY.bin and itself
// are fsync()ed, so a found KEY.idx means a whole dataset; a crash leaves
// none (work files are removed by the next tokenizer of KEY). One
// tokenization per node: a process tokenizes only while holding KEY.lock;
// others block on it and then find KEY.idx (flock dies with its process).
// The documents are split into `threads` contiguous ranges, each encoded by
// its own thread into its own part file, joined in order: the ids do not
// depend on the thread count. Every thread is joined before this returns.
// Memory: one document's ids per thread plus 4 bytes per document.
//
// Errors: sluice::Error naming the cache file and errno, the first error
// `encode` threw (by the range order), or that encode left out every
// document (nothing is published then), with the work files removed.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "sluice/text/token_file.h"

namespace sluice::text {

struct TokenCacheRequest {
  std::string dir;              // the node cache directory; tokens/ is made under it
  std::string identity;         // what the ids depend on (see above)
  std::uint64_t documents = 0;
  unsigned threads = 1;
  TokenType dtype = TokenType::uint32;  // uint16 needs every id below 65536 (checked)
  std::uint32_t eos = 0;        // appended after each document's ids
  // Appends document d's ids to `ids` (cleared before each call); false
  // leaves the document out of the dataset (on_error = "skip": a line that
  // does not parse), so the dataset may hold fewer documents than asked.
  // Called from `threads` threads at once for different documents.
  std::function<bool(std::uint64_t d, std::vector<std::int32_t>& ids)> encode;
};

struct TokenCacheResult {
  std::string idx, bin;         // the Megatron dataset's two files
  bool reused = false;          // found whole (made by an earlier run or another process)
  std::uint64_t tokens = 0;     // written by this call (0 when reused)
  std::uint64_t left_out = 0;   // documents encode left out, this call (0 when reused)
  double seconds = 0;           // spent tokenizing (0 when reused)
};

TokenCacheResult tokenize_cached(const TokenCacheRequest& request);

}  // namespace sluice::text
