// Token corpora: flat files split at EOS, Megatron-LM indexes, and bad input
// that must fail with an error naming the file.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "sluice/error.h"
#include "sluice/text/token_file.h"
#include "io_test_support.h"
#include "text_test_support.h"

using namespace sluice::text;
using namespace sluice::text::test;
using sluice::io::test::TempDir;

namespace {

void expect_documents(const TokenCorpus& corpus, const std::vector<std::vector<std::uint32_t>>& docs) {
  REQUIRE(corpus.documents() == docs.size());
  std::uint64_t total = 0;
  for (std::size_t d = 0; d < docs.size(); ++d) {
    REQUIRE(corpus.document(d).length == docs[d].size());
    std::vector<std::int64_t> got(docs[d].size());
    corpus.read(d, 0, got.size(), got.data());
    for (std::size_t i = 0; i < got.size(); ++i) REQUIRE(got[i] == docs[d][i]);
    total += docs[d].size();
  }
  REQUIRE(corpus.tokens() == total);
}

std::string error_of(const std::vector<std::string>& paths, const CorpusOptions& options) {
  try {
    TokenCorpus::open(paths, options);
  } catch (const sluice::Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("a flat token file splits into documents at each EOS, kept as their last token") {
  TempDir dir;
  auto docs = make_documents({5, 1, 7, 3}, true);
  docs.push_back({11, 12});  // no EOS at the end: a document of its own
  for (bool wide : {false, true}) {
    const std::string path = dir.file(wide ? "c32.bin" : "c16.bin");
    write_tokens(path, docs, wide);
    auto corpus = TokenCorpus::open({path}, {.dtype = wide ? TokenType::uint32 : TokenType::uint16, .eos = 0});
    expect_documents(*corpus, docs);
    auto whole = TokenCorpus::open({path}, {.dtype = wide ? TokenType::uint32 : TokenType::uint16});
    REQUIRE(whole->documents() == 1);
    REQUIRE(whole->document(0).length == corpus->tokens());
  }
}

TEST_CASE("several files number their documents in the order given") {
  TempDir dir;
  const auto a = make_documents({3, 4}, true);
  const auto b = make_documents({2}, true);
  write_tokens(dir.file("a.bin"), a, false);
  write_tokens(dir.file("b.bin"), b, false);
  auto corpus = TokenCorpus::open({dir.file("a.bin"), dir.file("b.bin")}, {.dtype = TokenType::uint16, .eos = 0});
  REQUIRE(corpus->documents() == 3);
  REQUIRE(corpus->document(2).file == 1);
  REQUIRE(corpus->file(1) == dir.file("b.bin"));
}

TEST_CASE("a Megatron-LM document is the sequences its document indices group") {
  TempDir dir;
  // Sentences as --split-sentences writes them: documents {0, 1}, {2}, {3, 4, 5}.
  const auto sentences = make_documents({4, 9, 1, 6, 2, 3}, false);
  const std::string prefix = dir.file("sentences");
  write_megatron(prefix, sentences, false, {0, 2, 3, 6});
  std::vector<std::vector<std::uint32_t>> docs(3);
  for (std::size_t s = 0; s < sentences.size(); ++s) {
    auto& doc = docs[s < 2 ? 0 : s < 3 ? 1 : 2];
    doc.insert(doc.end(), sentences[s].begin(), sentences[s].end());
  }
  expect_documents(*TokenCorpus::open({prefix}, {}), docs);
}

TEST_CASE("a Megatron-LM indexed dataset gives one document per sequence of its index") {
  TempDir dir;
  const auto docs = make_documents({4, 9, 1, 6}, false);
  for (bool wide : {false, true}) {
    const std::string prefix = dir.file(wide ? "m32" : "m16");
    write_megatron(prefix, docs, wide);
    const CorpusOptions options{.dtype = wide ? TokenType::uint32 : TokenType::uint16};
    expect_documents(*TokenCorpus::open({prefix}, options), docs);
    expect_documents(*TokenCorpus::open({prefix + ".bin"}, options), docs);
    expect_documents(*TokenCorpus::open({prefix + ".idx"}, options), docs);
  }
}

TEST_CASE("bad token input fails with an error naming the file") {
  TempDir dir;
  const auto docs = make_documents({4, 9, 1, 6}, true);

  SECTION("a length that is not a multiple of the dtype") {
    const std::string path = dir.file("odd.bin");
    write_tokens(path, docs, false);
    std::ofstream(path, std::ios::binary | std::ios::app).put('\x01');
    const std::string e = error_of({path}, {.dtype = TokenType::uint16, .eos = 0});
    REQUIRE_THAT(e, Catch::Contains(path) && Catch::Contains("not a whole number of uint16 tokens"));
    REQUIRE_THAT(error_of({dir.file("odd.bin")}, {.dtype = TokenType::uint32}), Catch::Contains("uint32"));
  }
  SECTION("a token id above the vocabulary") {
    const std::string path = dir.file("big.bin");
    write_tokens(path, docs, false);
    const std::string e = error_of({path}, {.dtype = TokenType::uint16, .eos = 0, .vocab_size = 10});
    REQUIRE_THAT(e, Catch::Contains(path) && Catch::Contains("token 9 (byte 18) is 10, not below vocab_size 10"));
    REQUIRE(error_of({path}, {.dtype = TokenType::uint16, .eos = 0, .vocab_size = 21}).empty());
  }
  SECTION("a truncated .idx") {
    const std::string prefix = dir.file("cut");
    write_megatron(prefix, docs, false);
    const auto full = std::filesystem::file_size(prefix + ".idx");
    for (std::uintmax_t keep : {full - 1, std::uintmax_t{40}, std::uintmax_t{20}}) {
      std::filesystem::resize_file(prefix + ".idx", keep);
      const std::string e = error_of({prefix}, {});
      REQUIRE_THAT(e, Catch::Contains(prefix + ".idx") && Catch::Contains("truncated"));
    }
  }
  SECTION("an .idx whose sequences lie outside the .bin") {
    const std::string prefix = dir.file("short");
    write_megatron(prefix, docs, false);
    std::filesystem::resize_file(prefix + ".bin", 10);
    REQUIRE_THAT(error_of({prefix}, {}), Catch::Contains(prefix + ".idx") && Catch::Contains("outside"));
  }
  SECTION("document indices that do not run from 0 to the sequence count") {
    const std::string prefix = dir.file("docidx");
    for (const std::vector<std::int64_t>& bad :
         std::vector<std::vector<std::int64_t>>{{1, 2, 4}, {0, 2, 3}, {0, 9, 4}, {0, 3, 2, 4}}) {
      write_megatron(prefix, docs, false, bad);
      REQUIRE_THAT(error_of({prefix}, {}), Catch::Contains(prefix + ".idx") && Catch::Contains("document"));
    }
    // Sequence 1 moved 2 bytes on (still inside the .bin): document 0 = {0, 1} is no longer contiguous.
    write_megatron(prefix, docs, false, {0, 2, 4});
    std::fstream idx(prefix + ".idx", std::ios::binary | std::ios::in | std::ios::out);
    const std::streamoff pointer1 = 34 + 4 * 4 + 8;
    std::int64_t at = 0;
    idx.seekg(pointer1);
    idx.read(reinterpret_cast<char*>(&at), 8);
    at += 2;
    idx.seekp(pointer1);
    idx.write(reinterpret_cast<const char*>(&at), 8);
    idx.close();
    REQUIRE_THAT(error_of({prefix}, {}), Catch::Contains(prefix + ".idx") && Catch::Contains("not right after"));
    // Moved 1 byte: inside a uint16 token, said as such (not "outside").
    idx.open(prefix + ".idx", std::ios::binary | std::ios::in | std::ios::out);
    at -= 1;
    idx.seekp(pointer1);
    idx.write(reinterpret_cast<const char*>(&at), 8);
    idx.close();
    REQUIRE_THAT(error_of({prefix}, {}), Catch::Contains(prefix + ".idx: sequence 1 starts at byte ") &&
                                             Catch::Contains("inside a uint16 token"));
  }
  SECTION("an .idx of another dtype, or not an index") {
    const std::string prefix = dir.file("wide");
    write_megatron(prefix, docs, true);
    REQUIRE_THAT(error_of({prefix}, {.dtype = TokenType::uint16}),
                 Catch::Contains(prefix + ".idx") && Catch::Contains("int32 (read as uint32) tokens") &&
                     Catch::Contains("give dtype = \"uint32\", or leave dtype out"));
    REQUIRE(error_of({prefix}, {}).empty());  // no dtype: the index's
    REQUIRE(parse_token_type("int32") == TokenType::uint32);  // Megatron's name for it
    std::ofstream(dir.file("junk.idx")) << "not an index at all, really";
    std::ofstream(dir.file("junk.bin")) << "xx";
    REQUIRE_THAT(error_of({dir.file("junk.idx")}, {}), Catch::Contains("junk.idx") && Catch::Contains("MMIDIDX"));
  }
  SECTION("a flat file without a dtype: its width is not guessed") {
    const std::string path = dir.file("flat.bin");
    write_tokens(path, docs, true);  // uint32 ids: read as uint16 they would be twice as many, all wrong
    REQUIRE_THAT(error_of({path}, {.eos = 0}), Catch::Contains(path + ": a flat token file does not say how wide") &&
                                                  Catch::Contains("dtype = \"uint32\""));
  }
  SECTION("a missing file") {
    REQUIRE_THAT(error_of({dir.file("none.bin")}, {}), Catch::Contains("none.bin"));
  }
}
