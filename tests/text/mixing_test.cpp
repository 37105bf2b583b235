// Mixing: exact proportions per period and within one of the weights over
// every window; per-source epochs; a pure function of the position.
#include <catch2/catch.hpp>

#include <cmath>
#include <map>

#include "sluice/error.h"
#include "sluice/text/mixing.h"
#include "io_test_support.h"
#include "text_test_support.h"

using namespace sluice::text;
using namespace sluice::text::test;
using sluice::io::test::TempDir;

TEST_CASE("the schedule's quotas are exact per period and within one over every window") {
  for (const std::vector<double>& w : std::vector<std::vector<double>>{
           {0.7, 0.3}, {1, 1, 1}, {0.5, 0.25, 0.125, 0.125}, {2, 3, 5}, {0.123, 0.877}}) {
    MixSchedule schedule(w);
    const std::uint64_t P = schedule.period();
    double total = 0;
    for (double x : w) total += x;
    std::vector<std::uint64_t> q;
    for (std::size_t s = 0; s < w.size(); ++s) {
      q.push_back(schedule.quota(static_cast<std::uint32_t>(s)));
      REQUIRE(std::fabs(static_cast<double>(q[s]) / static_cast<double>(P) - w[s] / total) <= 1.0 / 10000);
    }
    if (w == std::vector<double>{0.7, 0.3}) REQUIRE(P == 10);
    const std::uint64_t span = 3 * P;
    std::vector<std::vector<std::uint64_t>> prefix(w.size(), std::vector<std::uint64_t>(span + 1, 0));
    for (std::uint64_t g = 0; g < span; ++g) {
      const std::uint32_t s = schedule.source(g);
      for (std::size_t t = 0; t < w.size(); ++t) prefix[t][g + 1] = prefix[t][g] + (t == s ? 1 : 0);
      REQUIRE(schedule.rank(g) == prefix[s][g]);  // the source's counter, from the position alone
    }
    for (std::size_t s = 0; s < w.size(); ++s) {
      for (std::uint64_t a = 0; a < span; ++a) {
        if (a % P == 0 && a + P <= span) REQUIRE(prefix[s][a + P] - prefix[s][a] == q[s]);
        // prefixes stay within one of the quota's share
        const double share = static_cast<double>(a * q[s]) / static_cast<double>(P);
        REQUIRE(std::fabs(static_cast<double>(prefix[s][a]) - share) < 1.0);
        // so every window [a, b) holds its share to within two rows' rounding
        for (std::uint64_t b = a + 1; b <= std::min(span, a + 40); ++b) {
          const double want = static_cast<double>((b - a) * q[s]) / static_cast<double>(P);
          const double got = static_cast<double>(prefix[s][b] - prefix[s][a]);
          REQUIRE(got >= std::floor(want) - 1);
          REQUIRE(got <= std::ceil(want) + 1);
        }
      }
    }
  }
}

namespace {

// Rows of 8 tokens packed from `documents` documents of 5-20 tokens written to dir/name.
std::shared_ptr<Packing> packed(const TempDir& dir, const std::string& name, std::size_t documents, std::uint64_t seed) {
  write_tokens(dir.file(name), make_documents(lengths(documents, 5, 20, seed), true), true);
  return std::make_shared<Packing>(TokenCorpus::open({dir.file(name)}, {.dtype = TokenType::uint32, .eos = 0}),
                                   PackOptions{.seq_len = 8});
}

}  // namespace

TEST_CASE("a mix repeats a small source and cuts a large one, each on its own epochs") {
  TempDir dir;
  auto small = packed(dir, "small.bin", 10, 1);
  auto large = packed(dir, "large.bin", 400, 2);
  for (bool shuffle : {false, true}) {
    Mix mix({small, large}, {0.5, 0.5}, {.size = 200, .shuffle = shuffle, .seed = 3});
    REQUIRE(mix.rows() == 200);
    std::map<std::pair<std::uint64_t, std::uint64_t>, std::uint64_t> small_uses;
    std::uint64_t count[2] = {0, 0};
    for (std::uint64_t epoch = 0; epoch < 3; ++epoch) {
      for (std::uint64_t r = 0; r < mix.rows(); ++r) {
        const Mix::Pick p = mix.pick(epoch, r);
        ++count[p.source];
        if (p.source == 0) ++small_uses[{p.epoch, p.row}];
        const RowCopy got = fill_row(mix, epoch, r);
        const RowCopy want = fill_row(p.source == 0 ? static_cast<const PackedSource&>(*small) : *large, p.epoch, p.row);
        REQUIRE(got.tokens == want.tokens);
      }
    }
    REQUIRE(count[0] == 300);
    REQUIRE(count[1] == 300);
    // The small source went through whole epochs, each row once per its epoch.
    const std::uint64_t n = small->rows();
    for (const auto& [key, uses] : small_uses) REQUIRE(uses == 1);
    REQUIRE(small_uses.size() == 300);
    for (std::uint64_t e = 0; e < 300 / n; ++e)
      for (std::uint64_t r = 0; r < n; ++r) REQUIRE(small_uses.count({e, r}) == 1);
  }
}

TEST_CASE("mix refuses bad weights and mismatched rows") {
  REQUIRE_THROWS_WITH(MixSchedule({0.5, 0}), Catch::Contains("weight of source 2 must be positive"));
  REQUIRE_THROWS_WITH(MixSchedule({}), Catch::Contains("no source"));
  TempDir dir;
  write_tokens(dir.file("t.bin"), make_documents(lengths(20, 5, 20, 1), true), false);
  auto corpus = TokenCorpus::open({dir.file("t.bin")}, {.dtype = TokenType::uint16, .eos = 0});
  auto a = std::make_shared<Packing>(corpus, PackOptions{.seq_len = 8});
  auto b = std::make_shared<Packing>(corpus, PackOptions{.seq_len = 16});
  REQUIRE_THROWS_WITH(Mix({a, b}, {1, 1}, {}), Catch::Contains("source 2 packs rows of 16 tokens"));
}

TEST_CASE("new weights from a row on keep every row before it and continue each source's counter") {
  TempDir dir;
  auto a = packed(dir, "a.bin", 300, 1);
  auto b = packed(dir, "b.bin", 300, 2);
  const Mix before({a, b}, {0.7, 0.3}, {.size = 100});
  const Mix after({a, b}, {0.7, 0.3}, {.size = 100, .phases = {{137, {0.2, 0.8}}}});
  std::uint64_t next[2] = {0, 0};
  std::uint64_t in_phase[2] = {0, 0};
  for (std::uint64_t g = 0; g < 400; ++g) {
    const Mix::Pick p = after.pick(g / 100, g % 100);
    if (g < 137) {
      const Mix::Pick q = before.pick(g / 100, g % 100);
      REQUIRE((p.source == q.source && p.epoch == q.epoch && p.row == q.row));
    } else {
      ++in_phase[p.source];
    }
    // Unshuffled, each source's rows come in order: the counter runs on across the change.
    const std::uint64_t n = (p.source == 0 ? a : b)->rows();
    REQUIRE(p.epoch * n + p.row == next[p.source]);
    ++next[p.source];
  }
  // 263 rows at 0.2 / 0.8 (period 5): 52 whole periods of 1 + 4, then 3 slots.
  CHECK(in_phase[0] >= 52);
  CHECK(in_phase[0] <= 53);
  CHECK(in_phase[0] + in_phase[1] == 263);
  REQUIRE_THROWS_WITH(Mix({a, b}, {1, 1}, {.phases = {{0, {1, 2}}}}), Catch::Contains("increasing rows above 0"));
  REQUIRE_THROWS_WITH(Mix({a, b}, {1, 1}, {.phases = {{5, {1}}}}), Catch::Contains("has 1 weights for 2 sources"));
}
