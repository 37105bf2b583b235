// SentencePiece in C++ gives python3-sentencepiece's ids for the same model
// and text: unigram and BPE models with byte fallback, trained here by
// spm_train on Debian's license texts, over every license whole and line by line.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "io_test_support.h"
#include "skip.h"
#include "sluice/error.h"
#include "sluice/text/tokenizer.h"

using sluice::io::test::TempDir;
using sluice::text::SentencePiece;

namespace {

const char* kLicenses = "/usr/share/common-licenses";

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Debian's license texts, sorted.
std::vector<std::string> license_files() {
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(kLicenses))
    if (entry.is_regular_file() && !entry.is_symlink()) files.push_back(entry.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

// The texts compared: each license whole, then each of its non-empty lines,
// then a line of scripts the licenses never use (byte fallback).
std::vector<std::string> texts(const std::vector<std::string>& files) {
  std::vector<std::string> out;
  for (const auto& f : files) out.push_back(slurp(f));
  for (const auto& f : files) {
    std::istringstream in(slurp(f));
    for (std::string line; std::getline(in, line);)
      if (!line.empty()) out.push_back(line);
  }
  out.push_back("Grüße aus Zürich, naïve café, 東京の夜 🙂 ½ — done.");
  return out;
}

}  // namespace

TEST_CASE("SentencePiece ids equal python3-sentencepiece's on real text (unigram and BPE, byte fallback)") {
#if !SLUICE_WITH_SENTENCEPIECE
  SKIP_TEST("built without SentencePiece (configured with -DSLUICE_SENTENCEPIECE=OFF)");
#endif
  if (std::system("command -v spm_train > /dev/null 2>&1") != 0)
    SKIP_TEST("spm_train not found (Debian package sentencepiece)");
  if (std::system("/usr/bin/python3 -c 'import sentencepiece' > /dev/null 2>&1") != 0)
    SKIP_TEST("/usr/bin/python3 has no sentencepiece module (Debian package python3-sentencepiece)");
  if (!std::filesystem::is_directory(kLicenses)) SKIP_TEST(kLicenses << " is missing");
  const std::vector<std::string> files = license_files();
  REQUIRE(files.size() >= 5);

  TempDir dir;
  const std::vector<std::string> all = texts(files);
  {
    std::ofstream list(dir.file("texts.bin"), std::ios::binary);
    for (const auto& t : all) list << t.size() << '\n' << t;
  }
  const std::string corpus = files[0] + "," + files[1] + "," + files[2];
  for (const std::string type : {"unigram", "bpe"}) {
    INFO(type);
    const std::string prefix = dir.file(type);
    const std::string train = "spm_train --input=" + corpus + " --model_prefix=" + prefix + " --vocab_size=600 --model_type=" +
                              type + " --byte_fallback=true --minloglevel=2 > " + dir.file("train.log") + " 2>&1";
    REQUIRE(std::system(train.c_str()) == 0);
    const std::string script = dir.file("encode.py");
    std::ofstream(script) << "import sentencepiece as spm, sys\n"
                             "sp = spm.SentencePieceProcessor(model_file=sys.argv[1])\n"
                             "data = open(sys.argv[2], 'rb').read()\n"
                             "out = open(sys.argv[3], 'w')\n"
                             "at = 0\n"
                             "while at < len(data):\n"
                             "    nl = data.index(b'\\n', at)\n"
                             "    n = int(data[at:nl]); text = data[nl + 1:nl + 1 + n].decode('utf-8'); at = nl + 1 + n\n"
                             "    out.write(' '.join(map(str, sp.encode(text))) + '\\n')\n";
    const std::string run = "/usr/bin/python3 " + script + " " + prefix + ".model " + dir.file("texts.bin") + " " +
                            dir.file("ids.txt");
    REQUIRE(std::system(run.c_str()) == 0);

    auto model = SentencePiece::open(prefix + ".model");
    REQUIRE(model->vocab_size() == 600);
    // Unigram models go through Sluice's encoder, BPE models through the library.
    REQUIRE(model->encoder() == (type == "unigram" ? "sluice unigram" : "libsentencepiece (not a unigram model)"));
    std::ifstream ids(dir.file("ids.txt"));
    std::vector<std::int32_t> got;
    std::size_t compared = 0, tokens = 0, bytes = 0;
    for (const auto& text : all) {
      std::string line;
      REQUIRE(std::getline(ids, line));
      std::vector<std::int32_t> want;
      std::istringstream in(line);
      for (std::int32_t id; in >> id;) want.push_back(id);
      model->encode(text, &got);
      INFO(text.substr(0, 80));
      REQUIRE(got == want);
      ++compared;
      tokens += got.size();
      bytes += text.size();
    }
    CAPTURE(compared, tokens, bytes);
    REQUIRE(compared == all.size());
    // The last text needs byte pieces: its CJK characters are not in the vocabulary.
    model->encode(all.back(), &got);
    REQUIRE(std::any_of(got.begin(), got.end(), [&](std::int32_t id) { return id >= 3 && id < 3 + 256; }));
  }
}

TEST_CASE("a missing or broken SentencePiece model fails naming the file") {
  TempDir dir;
#if !SLUICE_WITH_SENTENCEPIECE
  // Without the library every model is refused, naming the file and why.
  REQUIRE_THROWS_WITH(SentencePiece::open(dir.file("none.model")),
                      Catch::Contains(dir.file("none.model")) && Catch::Contains("built without SentencePiece"));
  return;
#endif
  REQUIRE_THROWS_WITH(SentencePiece::open(dir.file("none.model")), Catch::Contains(dir.file("none.model")));
  std::ofstream(dir.file("bad.model")) << "not a model";
  REQUIRE_THROWS_WITH(SentencePiece::open(dir.file("bad.model")),
                      Catch::Contains(dir.file("bad.model")) && Catch::Contains("cannot load"));
}

namespace {

// Random texts built to reach every branch of the normalizer and the
// Viterbi: runs of ASCII and whitespace of every kind, characters the
// character maps rewrite (full-width, compatibility, ligatures, NBSP,
// zero-width), combining marks, scripts no small vocabulary holds, emoji,
// malformed and cut UTF-8, literal U+FFFD, control bytes.
std::string random_text(std::mt19937_64& rng) {
  static const std::vector<std::string> atoms = {
      "the", " ", "  ", "\t", "\n", "\r\n", "software", "License", ",", ".", "0", "42", "3.14", "-", "(c)",
      "\xef\xbc\xa1", "\xef\xbd\x82", "\xe3\x80\x80", "\xe2\x91\xa0", "\xef\xac\x81", "\xc2\xbd", "\xe2\x84\xa2",
      "\xc2\xa0", "\xe2\x80\x8b", "\xcc\x81", "e\xcc\x81", "\xc3\xa9", "\xc3\x9f", "\xe6\x9d\xb1", "\xe4\xba\xac",
      "\xd0\x96", "\xd8\xb9", "\xf0\x9f\x99\x82", "\xef\xbf\xbd", "\xff", "\xc3", "\xe2\x82", "\xf0\x9f",
      "\x01", "\x1f", "\x7f", "\xe2\x96\x81", "_", "\xe1\xba\x9e", "\xe2\x80\xa8", "\xef\xbb\xbf"};
  std::string out;
  const std::size_t n = rng() % 40;
  for (std::size_t i = 0; i < n; ++i) {
    if (rng() % 8 == 0) out += static_cast<char>(rng() % 256 == 0 ? 1 : rng() % 256);  // any byte but NUL
    else out += atoms[rng() % atoms.size()];
  }
  return out;
}

}  // namespace

TEST_CASE("Sluice's unigram encoder gives libsentencepiece's ids for every normalizer option, on real and random text") {
#if !SLUICE_WITH_SENTENCEPIECE
  SKIP_TEST("built without SentencePiece (configured with -DSLUICE_SENTENCEPIECE=OFF)");
#endif
  if (std::system("command -v spm_train > /dev/null 2>&1") != 0)
    SKIP_TEST("spm_train not found (Debian package sentencepiece)");
  if (!std::filesystem::is_directory(kLicenses)) SKIP_TEST(kLicenses << " is missing");
  const std::vector<std::string> files = license_files();
  REQUIRE(files.size() >= 5);
  std::vector<std::string> all = texts(files);
  std::mt19937_64 rng(20261126);
  for (int i = 0; i < 4000; ++i) all.push_back(random_text(rng));
  all.push_back(std::string("a NUL \0 byte goes to the library", 33));

  TempDir dir;
  // Options that change what the encoder does: the character map (NFKC,
  // NFKC with case folding, none), whitespace handling, byte fallback or
  // merged unknowns, a larger vocabulary.
  const std::vector<std::string> options = {
      "--vocab_size=600 --byte_fallback=true",
      "--vocab_size=600 --normalization_rule_name=nmt_nfkc_cf",
      "--vocab_size=400 --normalization_rule_name=identity --add_dummy_prefix=false",
      "--vocab_size=400 --remove_extra_whitespaces=false --byte_fallback=true",
      "--vocab_size=400 --treat_whitespace_as_suffix=true --split_digits=true",
      "--vocab_size=300 --normalization_rule_name=nfkc --remove_extra_whitespaces=false --allow_whitespace_only_pieces=true",
      "--vocab_size=2000 --byte_fallback=true --character_coverage=0.98",
  };
  for (std::size_t k = 0; k < options.size(); ++k) {
    INFO(options[k]);
    const std::string prefix = dir.file("m" + std::to_string(k));
    const std::string train = "spm_train --input=" + files[0] + "," + files[1] + "," + files[2] + " --model_prefix=" + prefix +
                              " --hard_vocab_limit=false --minloglevel=2 " + options[k] + " > " + dir.file("train.log") + " 2>&1";
    REQUIRE(std::system(train.c_str()) == 0);
    const auto ours = SentencePiece::open(prefix + ".model");
    const auto library = SentencePiece::open(prefix + ".model", /*library_only=*/true);
    REQUIRE(ours->encoder() == "sluice unigram");
    REQUIRE(library->encoder() == "libsentencepiece");
    std::vector<std::int32_t> got, want;
    std::size_t tokens = 0;
    for (const auto& text : all) {
      ours->encode(text, &got);
      library->encode(text, &want);
      if (got != want) {
        INFO("text (" << text.size() << " bytes): " << text.substr(0, 120));
        REQUIRE(got == want);
      }
      tokens += got.size();
    }
    CAPTURE(all.size(), tokens);
    REQUIRE(tokens > all.size());
  }
  // User-defined symbols stay with the library, which says so.
  const std::string prefix = dir.file("user");
  const std::string train = "spm_train --input=" + files[0] + " --model_prefix=" + prefix +
                            " --vocab_size=300 --hard_vocab_limit=false --minloglevel=2 --user_defined_symbols=foo,bar > " +
                            dir.file("train.log") + " 2>&1";
  REQUIRE(std::system(train.c_str()) == 0);
  REQUIRE(SentencePiece::open(prefix + ".model")->encoder() == "libsentencepiece (user-defined symbols)");
}
