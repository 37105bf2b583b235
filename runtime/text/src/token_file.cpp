#include "sluice/text/token_file.h"

#include <cstring>

#include "mapped_file.h"
#include "sluice/error.h"

namespace sluice::text {
namespace {

std::size_t token_bytes(TokenType type) { return type == TokenType::uint16 ? 2 : 4; }

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// The Megatron prefix `path` names, or "" for a flat file.
std::string megatron_prefix(const std::string& path) {
  if (ends_with(path, ".idx")) return path.substr(0, path.size() - 4);
  if (ends_with(path, ".bin") && detail::file_exists(path.substr(0, path.size() - 4) + ".idx"))
    return path.substr(0, path.size() - 4);
  if (!detail::file_exists(path) && detail::file_exists(path + ".idx") && detail::file_exists(path + ".bin"))
    return path;
  return "";
}

// Little-endian reads from the index (x86-64 and aarch64 are little-endian).
template <typename T>
T load(const unsigned char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

}  // namespace

std::optional<TokenType> parse_token_type(const std::string& name) {
  if (name == "uint16") return TokenType::uint16;
  if (name == "uint32" || name == "int32") return TokenType::uint32;
  return std::nullopt;
}

const char* name_of(TokenType type) { return type == TokenType::uint16 ? "uint16" : "uint32"; }

std::shared_ptr<const TokenCorpus> TokenCorpus::open(const std::vector<std::string>& paths,
                                                     const CorpusOptions& options) {
  std::vector<Input> inputs;
  for (const std::string& path : paths) inputs.push_back({path});
  return open(inputs, options);
}

std::shared_ptr<const TokenCorpus> TokenCorpus::open(const std::vector<Input>& inputs, const CorpusOptions& options) {
  if (inputs.empty()) throw Error("no token file given");
  std::shared_ptr<TokenCorpus> corpus(new TokenCorpus());
  for (const Input& input : inputs) {
    if (!input.idx.empty()) {
      corpus->add_megatron(input.idx, input.path, options);
      continue;
    }
    const std::string prefix = megatron_prefix(input.path);
    if (prefix.empty()) corpus->add_flat(input.path, options);
    else corpus->add_megatron(prefix + ".idx", prefix + ".bin", options);
  }
  return corpus;
}

std::shared_ptr<const TokenCorpus> TokenCorpus::open_megatron(const std::string& idx_path, const std::string& bin_path,
                                                              const CorpusOptions& options) {
  std::shared_ptr<TokenCorpus> corpus(new TokenCorpus());
  corpus->add_megatron(idx_path, bin_path, options);
  corpus->text_origin_ = options.text_origin;
  return corpus;
}

std::shared_ptr<const TokenCorpus> TokenCorpus::from_documents(const std::string& name, std::vector<std::uint32_t> tokens,
                                                               const std::vector<std::uint64_t>& lengths) {
  std::shared_ptr<TokenCorpus> corpus(new TokenCorpus());
  auto held = std::make_shared<const std::vector<std::uint32_t>>(std::move(tokens));
  corpus->files_.push_back({name, TokenType::uint32, held, held->data(), held->size()});
  std::uint64_t at = 0;
  for (std::uint64_t n : lengths) {
    if (n == 0) continue;
    if (at + n > held->size()) throw Error(name + ": the documents' lengths exceed its tokens");
    corpus->documents_.push_back({0, at, n});
    at += n;
  }
  corpus->tokens_ = at;
  return corpus;
}

void TokenCorpus::check_vocab(std::uint32_t f, std::uint64_t begin, std::uint64_t count,
                              std::uint64_t vocab) const {
  if (vocab == 0) return;
  const File& file = files_[f];
  for (std::uint64_t i = begin; i < begin + count; ++i) {
    const std::uint32_t id = file.type == TokenType::uint16 ? static_cast<const std::uint16_t*>(file.data)[i]
                                                            : static_cast<const std::uint32_t*>(file.data)[i];
    if (id >= vocab)
      throw Error(file.path + ": token " + std::to_string(i) + " (byte " +
                  std::to_string(i * token_bytes(file.type)) + ") is " + std::to_string(id) +
                  ", not below vocab_size " + std::to_string(vocab));
  }
}

void TokenCorpus::add_flat(const std::string& path, const CorpusOptions& options) {
  if (!options.dtype)
    throw Error(path + ": a flat token file does not say how wide its ids are: give dtype = \"uint16\" (nanoGPT's "
                "files, vocabularies up to 65,536 ids) or dtype = \"uint32\" (larger vocabularies; Megatron files, "
                "FILE.bin beside FILE.idx, say it themselves)");
  const TokenType type = *options.dtype;
  detail::MappedFile mapped = detail::map_file(path);
  const std::size_t width = token_bytes(type);
  if (mapped.size % width != 0)
    throw Error(path + ": " + std::to_string(mapped.size) + " bytes is not a whole number of " + name_of(type) +
                " tokens (" + std::to_string(width) + " bytes each); is the dtype right, or the file cut short?");
  const auto f = static_cast<std::uint32_t>(files_.size());
  files_.push_back({path, type, mapped.mapping, mapped.mapping.get(), mapped.size / width});
  const File& file = files_.back();
  check_vocab(f, 0, file.tokens, options.vocab_size);
  std::uint64_t start = 0;
  if (options.eos) {
    const std::uint32_t eos = *options.eos;
    for (std::uint64_t i = 0; i < file.tokens; ++i) {
      const std::uint32_t id = file.type == TokenType::uint16 ? static_cast<const std::uint16_t*>(file.data)[i]
                                                              : static_cast<const std::uint32_t*>(file.data)[i];
      if (id != eos) continue;
      documents_.push_back({f, start, i + 1 - start});
      start = i + 1;
    }
  }
  if (start < file.tokens) documents_.push_back({f, start, file.tokens - start});
  tokens_ += file.tokens;
}

// megatron.core.datasets.indexed_dataset: "MMIDIDX\0\0", version (u64 = 1),
// dtype code (u8), sequence count (u64), document count (u64), then
// int32 sequence_lengths[sequences], int64 sequence_pointers[sequences] (byte
// offsets into .bin), int64 document_indices[documents].
void TokenCorpus::add_megatron(const std::string& idx_path, const std::string& bin_path, const CorpusOptions& options) {
  detail::MappedFile idx = detail::map_file(idx_path);
  static constexpr unsigned char kMagic[9] = {'M', 'M', 'I', 'D', 'I', 'D', 'X', 0, 0};
  constexpr std::uint64_t kHeader = 9 + 8 + 1 + 8 + 8;
  if (idx.size < 9 || std::memcmp(idx.bytes(), kMagic, 9) != 0)
    throw Error(idx_path + ": not a Megatron-LM index (no MMIDIDX magic)");
  if (idx.size < kHeader)
    throw Error(idx_path + ": truncated: " + std::to_string(idx.size) + " bytes, the header alone takes " +
                std::to_string(kHeader));
  const unsigned char* p = idx.bytes();
  const auto version = load<std::uint64_t>(p + 9);
  if (version != 1) throw Error(idx_path + ": index version " + std::to_string(version) + " (sluice reads version 1)");
  const unsigned code = p[17];
  TokenType type;
  if (code == 8) type = TokenType::uint16;
  else if (code == 4) type = TokenType::uint32;  // int32 ids, read as uint32
  else
    throw Error(idx_path + ": token type code " + std::to_string(code) +
                " is not supported (uint16 = 8 and int32 = 4 are)");
  if (options.dtype && type != *options.dtype)
    throw Error(idx_path + ": the index holds " + std::string(code == 4 ? "int32 (read as uint32)" : "uint16") +
                " tokens, but dtype = \"" + name_of(*options.dtype) + "\" was given: give dtype = \"" +
                name_of(type) + "\", or leave dtype out to take the index's");
  const auto sequences = load<std::uint64_t>(p + 18);
  const auto docs = load<std::uint64_t>(p + 26);
  const std::uint64_t limit = idx.size;  // every count below is bounded by the file's size
  if (sequences > limit / 12 || docs > limit / 8 || kHeader + sequences * 12 + docs * 8 > idx.size)
    throw Error(idx_path + ": truncated: " + std::to_string(sequences) + " sequences and " + std::to_string(docs) +
                " documents need " + std::to_string(kHeader + sequences * 12 + docs * 8) + " bytes, the file has " +
                std::to_string(idx.size));
  detail::MappedFile bin = detail::map_file(bin_path);
  const std::size_t width = token_bytes(type);
  if (bin.size % width != 0)
    throw Error(bin_path + ": " + std::to_string(bin.size) + " bytes is not a whole number of " + name_of(type) +
                " tokens");
  const auto f = static_cast<std::uint32_t>(files_.size());
  files_.push_back({bin_path, type, bin.mapping, bin.mapping.get(), bin.size / width});
  const unsigned char* lengths = p + kHeader;
  const unsigned char* pointers = lengths + sequences * 4;
  const unsigned char* document_indices = pointers + sequences * 8;
  // document_indices holds the first sequence of each document and, last,
  // the sequence count (Megatron's builder starts it at 0 and appends after
  // each document): a document is the sequences between two entries, e.g.
  // the sentences of a text preprocessed with --split-sentences.
  if (docs == 0 || load<std::int64_t>(document_indices) != 0 ||
      load<std::int64_t>(document_indices + (docs - 1) * 8) != static_cast<std::int64_t>(sequences))
    throw Error(idx_path + ": its document indices must run from 0 to the sequence count (" +
                std::to_string(sequences) + ")");
  documents_.reserve(documents_.size() + docs - 1);
  std::uint64_t next_byte = 0;  // where the next sequence of the document must start
  for (std::uint64_t d = 0; d + 1 < docs; ++d) {
    const auto first = load<std::int64_t>(document_indices + d * 8);
    const auto end = load<std::int64_t>(document_indices + (d + 1) * 8);
    if (end < first || end > static_cast<std::int64_t>(sequences))
      throw Error(idx_path + ": document " + std::to_string(d) + " runs from sequence " + std::to_string(first) +
                  " to " + std::to_string(end) + ", outside 0.." + std::to_string(sequences));
    std::uint64_t begin = 0, length = 0;
    for (auto s = static_cast<std::uint64_t>(first); s < static_cast<std::uint64_t>(end); ++s) {
      const auto n = load<std::int32_t>(lengths + s * 4);
      const auto pointer = load<std::int64_t>(pointers + s * 8);
      if (pointer >= 0 && static_cast<std::uint64_t>(pointer) % width != 0)
        throw Error(idx_path + ": sequence " + std::to_string(s) + " starts at byte " + std::to_string(pointer) +
                    ", inside a " + name_of(type) + " token (a pointer must be a multiple of " +
                    std::to_string(width) + "): the index does not match " + bin_path);
      if (n < 0 || pointer < 0 ||
          static_cast<std::uint64_t>(pointer) / width + static_cast<std::uint64_t>(n) > files_[f].tokens)
        throw Error(idx_path + ": sequence " + std::to_string(s) + " (" + std::to_string(n) +
                    " tokens at byte " + std::to_string(pointer) + ") lies outside " + bin_path + " (" +
                    std::to_string(bin.size) + " bytes)");
      if (s == static_cast<std::uint64_t>(first)) begin = static_cast<std::uint64_t>(pointer) / width;
      else if (static_cast<std::uint64_t>(pointer) != next_byte)
        throw Error(idx_path + ": sequence " + std::to_string(s) + " of document " + std::to_string(d) +
                    " starts at byte " + std::to_string(pointer) + ", not right after the one before (" +
                    std::to_string(next_byte) + "); sluice reads documents stored contiguously, as "
                    "Megatron-LM writes them");
      next_byte = static_cast<std::uint64_t>(pointer) + static_cast<std::uint64_t>(n) * width;
      length += static_cast<std::uint64_t>(n);
    }
    if (length == 0) continue;
    check_vocab(f, begin, length, options.vocab_size);
    documents_.push_back({f, begin, length});
    tokens_ += length;
  }
}

void TokenCorpus::read(std::uint64_t d, std::uint64_t begin, std::uint64_t count, std::int64_t* out) const {
  const Document& doc = documents_[d];
  const File& f = files_[doc.file];
  const std::uint64_t at = doc.begin + begin;
  if (f.type == TokenType::uint16) {
    const auto* src = static_cast<const std::uint16_t*>(f.data) + at;
    for (std::uint64_t i = 0; i < count; ++i) out[i] = src[i];
  } else {
    const auto* src = static_cast<const std::uint32_t*>(f.data) + at;
    for (std::uint64_t i = 0; i < count; ++i) out[i] = src[i];
  }
}

std::string TokenCorpus::origin(std::uint64_t d, std::uint64_t token) const {
  if (d >= documents_.size()) return "";
  const Document& doc = documents_[d];
  const std::string where = files_[doc.file].path + " token " + std::to_string(doc.begin + token);
  const std::string text = text_origin_ ? text_origin_(d) : std::string();
  return text.empty() ? where : text + ", token " + std::to_string(token) + " (" + where + ")";
}

}  // namespace sluice::text
