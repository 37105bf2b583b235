// Fuzzes token corpora: a Megatron-LM index and its .bin (the input split at
// a 4-byte length of the .idx part), opened with a vocabulary check, and the
// same bytes as a flat uint16 file split at EOS; every document of what opens
// is read and packed both ways, or opening throws sluice::Error naming a file.
#include <cstdint>
#include <cstring>
#include <vector>

#include "memfd_file.h"
#include "sluice/error.h"
#include "sluice/text/packing.h"
#include "sluice/text/token_file.h"

namespace {

void use(const std::shared_ptr<const sluice::text::TokenCorpus>& corpus) {
  std::vector<std::int64_t> tokens;
  for (std::uint64_t d = 0; d < corpus->documents() && d < 256; ++d) {
    tokens.resize(corpus->document(d).length);
    corpus->read(d, 0, tokens.size(), tokens.data());
  }
  for (const auto mode : {sluice::text::PackMode::concat, sluice::text::PackMode::best_fit}) {
    try {
      sluice::text::Packing packing(corpus, {.seq_len = 8, .mode = mode, .window = 4});
      std::vector<std::int64_t> t(8), y(8);
      std::vector<std::int32_t> s(8), p(8);
      std::vector<float> m(8);
      for (std::uint64_t r = 0; r < packing.rows() && r < 64; ++r)
        packing.fill(0, r, {t.data(), y.data(), s.data(), p.data(), m.data()});
    } catch (const sluice::Error&) {
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::uint32_t idx_size = 0;
  if (size >= 4) std::memcpy(&idx_size, data, 4);
  const std::size_t rest = size >= 4 ? size - 4 : 0;
  if (idx_size > rest) idx_size = static_cast<std::uint32_t>(rest);
  MemfdFile idx(data + (size >= 4 ? 4 : 0), idx_size);
  MemfdFile bin(data + (size >= 4 ? 4 : 0) + idx_size, rest - idx_size);
  try {
    use(sluice::text::TokenCorpus::open_megatron(idx.path(), bin.path(), {.vocab_size = 60000}));
  } catch (const sluice::Error&) {
  }
  try {
    use(sluice::text::TokenCorpus::open({bin.path()}, {.dtype = sluice::text::TokenType::uint16, .eos = 0}));
  } catch (const sluice::Error&) {
  }
  return 0;
}
