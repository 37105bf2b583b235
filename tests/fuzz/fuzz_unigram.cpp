// Fuzzes Sluice's unigram encoder against libsentencepiece: two models
// trained at start-up by spm_train on a Debian license text (one with byte
// fallback, one merging unknown pieces), the input's first byte choosing one
// and the rest encoded both ways (SentencePiece::open, and open with
// library_only); any difference aborts with both id lists. Without spm_train
// or SentencePiece there is nothing to compare: every input passes.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/text/tokenizer.h"

namespace {

using Model = std::shared_ptr<const sluice::text::SentencePiece>;

struct Models {
  Model ours[2], library[2];
  bool ready = false;
};

Models load() {
  Models m;
#if SLUICE_WITH_SENTENCEPIECE
  char dir[] = "/tmp/sluice-fuzz-unigram-XXXXXX";
  if (std::system("command -v spm_train > /dev/null 2>&1") != 0 || ::access("/usr/share/common-licenses/GPL-3", R_OK) != 0 ||
      ::mkdtemp(dir) == nullptr)
    return m;
  const char* options[2] = {"--byte_fallback=true", "--normalization_rule_name=nmt_nfkc_cf"};
  for (int k = 0; k < 2; ++k) {
    const std::string prefix = std::string(dir) + "/m" + std::to_string(k);
    const std::string train = "spm_train --input=/usr/share/common-licenses/GPL-3 --model_prefix=" + prefix +
                              " --vocab_size=400 --hard_vocab_limit=false --minloglevel=2 " + options[k] +
                              " > /dev/null 2>&1";
    if (std::system(train.c_str()) != 0) {  // spm_train is there: its failure is not a pass
      std::fprintf(stderr, "fuzz_unigram: %s failed\n", train.c_str());
      std::abort();
    }
    m.ours[k] = sluice::text::SentencePiece::open(prefix + ".model");
    m.library[k] = sluice::text::SentencePiece::open(prefix + ".model", /*library_only=*/true);
    ::unlink((prefix + ".model").c_str());
    ::unlink((prefix + ".vocab").c_str());
    if (m.ours[k]->encoder() != "sluice unigram") {
      std::fprintf(stderr, "fuzz_unigram: the model is not encoded by Sluice's encoder: %s\n", m.ours[k]->encoder().c_str());
      std::abort();
    }
  }
  ::rmdir(dir);
  m.ready = true;
#endif
  return m;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const Models models = load();
  if (!models.ready || size == 0) return 0;
  const int k = data[0] & 1;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  std::vector<std::int32_t> ours, library;
  models.ours[k]->encode(text, &ours);
  models.library[k]->encode(text, &library);
  if (ours != library) {
    std::fprintf(stderr, "fuzz_unigram: model %d: %zu ids from Sluice, %zu from libsentencepiece\n", k, ours.size(),
                 library.size());
    for (std::size_t i = 0; i < ours.size() || i < library.size(); ++i)
      std::fprintf(stderr, "  %zu: %d %d\n", i, i < ours.size() ? ours[i] : -1, i < library.size() ? library[i] : -1);
    std::abort();
  }
  return 0;
}
