// SentencePiece in C++ gives python3-sentencepiece's ids for the same model
// and text: unigram and BPE models with byte fallback, trained here by
// spm_train on Debian's license texts, over every license whole and line by line.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
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
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(kLicenses))
    if (entry.is_regular_file() && !entry.is_symlink()) files.push_back(entry.path().string());
  std::sort(files.begin(), files.end());
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
