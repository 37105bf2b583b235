// The locality shuffle (sluice/shard_shuffle.h): each sample once per epoch,
// only a window's shards read at any point, deterministic, and through real
// Loaders independent of the worker count and resumable on another world size.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <vector>

#include "sluice/error.h"
#include "sluice/loader.h"
#include "sluice/plan.h"
#include "sluice/producer.h"
#include "sluice/shard_shuffle.h"
#include "sluice/state.h"
#include "test_support.h"

using namespace sluice;

namespace {

// Uneven shards, two of them empty: 37 shards, 1000-odd samples.
std::vector<std::uint64_t> uneven_shards() {
  std::vector<std::uint64_t> sizes;
  for (std::uint64_t s = 0; s < 37; ++s) sizes.push_back(s == 5 || s == 20 ? 0 : 10 + (s * 7) % 41);
  return sizes;
}

std::uint64_t shard_of(const std::vector<std::uint64_t>& sizes, std::uint64_t index) {
  for (std::uint64_t s = 0;; ++s) {
    if (index < sizes[s]) return s;
    index -= sizes[s];
  }
}

std::vector<std::uint64_t> epoch_order(const ShardShuffle& shuffle, std::uint64_t epoch) {
  const auto order = shuffle.epoch(epoch);
  std::vector<std::uint64_t> out(shuffle.size());
  for (std::uint64_t p = 0; p < out.size(); ++p) out[p] = order->sample(p);
  return out;
}

}  // namespace

TEST_CASE("shard shuffle: every sample once per epoch, for uneven and empty shards and any window", "[shard_shuffle]") {
  const auto sizes = uneven_shards();
  const std::uint64_t n = std::accumulate(sizes.begin(), sizes.end(), std::uint64_t{0});
  for (std::uint32_t k : {1u, 2u, 3u, 8u, 36u, 37u, 100u}) {
    ShardShuffle shuffle(sizes, k, 5);
    REQUIRE(shuffle.size() == n);
    for (std::uint64_t epoch : {0u, 1u, 7u}) {
      INFO("window " << k << ", epoch " << epoch);
      std::vector<std::uint64_t> order = epoch_order(shuffle, epoch);
      std::sort(order.begin(), order.end());
      std::vector<std::uint64_t> all(n);
      std::iota(all.begin(), all.end(), 0);
      REQUIRE(order == all);
    }
  }
}

TEST_CASE("shard shuffle: a pure function of (seed, epoch, position), new per epoch and per seed", "[shard_shuffle]") {
  const auto sizes = uneven_shards();
  const ShardShuffle a(sizes, 4, 11), b(sizes, 4, 11), c(sizes, 4, 12);
  CHECK(epoch_order(a, 3) == epoch_order(b, 3));
  CHECK(epoch_order(a, 3) != epoch_order(a, 4));
  CHECK(epoch_order(a, 3) != epoch_order(c, 3));
  CHECK(a.epoch(3)->shard_order() != a.epoch(4)->shard_order());
  // Asked in any order, from fresh tables, a position gives the same sample.
  const auto order = epoch_order(a, 2);
  for (std::uint64_t p = order.size(); p-- > 0;) REQUIRE(b.epoch(2)->sample(p) == order[p]);
  CHECK_THROWS_WITH(a.epoch(0)->sample(a.size()), Catch::Contains("past the epoch's"));
  CHECK_THROWS_WITH(ShardShuffle({}, 4, 0), Catch::Contains("needs the data set's shards"));
  CHECK_THROWS_WITH(ShardShuffle({3, 4}, 0, 0), Catch::Contains("shuffle_window is 0"));
  CHECK(ShardShuffle::hash_layout({3, 4}) != ShardShuffle::hash_layout({4, 3}));
}

TEST_CASE("shard shuffle: only the window's shards are read, in every stretch of the order", "[shard_shuffle]") {
  const auto sizes = uneven_shards();
  for (std::uint32_t k : {1u, 2u, 4u, 9u}) {
    const ShardShuffle shuffle(sizes, k, 3);
    for (std::uint64_t epoch : {0u, 1u}) {
      INFO("window " << k << ", epoch " << epoch);
      const auto order = shuffle.epoch(epoch);
      const std::uint64_t n = shuffle.size();
      // Each shard's samples lie in its use span, and the span's positions read only the window's shards.
      std::map<std::uint64_t, std::pair<std::uint64_t, std::uint64_t>> seen;  // shard -> first, last position
      for (std::uint64_t p = 0; p < n; ++p) {
        const std::uint64_t s = shard_of(sizes, order->sample(p));
        REQUIRE(order->shard_at(p) == s);
        auto [it, fresh] = seen.emplace(s, std::pair(p, p));
        it->second.second = p;
        const ShardShuffle::Use use = order->use(static_cast<std::uint32_t>(s));
        REQUIRE((use.begin <= p && p < use.end));
        const auto window = order->shards_between(p, p + 1);
        REQUIRE(window.size() <= k);
        REQUIRE(std::find(window.begin(), window.end(), s) != window.end());
      }
      // The smallest window's length: any stretch that long meets at most two windows.
      std::uint64_t shortest = n;
      for (std::uint32_t s = 0; s < shuffle.shards(); ++s) {
        const ShardShuffle::Use use = order->use(s);
        if (use.end > use.begin) shortest = std::min(shortest, use.end - use.begin);
      }
      for (std::uint64_t p = 0; p + shortest <= n; ++p) {
        std::set<std::uint64_t> distinct;
        for (std::uint64_t q = p; q < p + shortest; ++q) distinct.insert(order->shard_at(q));
        REQUIRE(distinct.size() <= 2 * k);
      }
      // next_use: the span's start before it, the position itself within it, nothing after it.
      for (const auto& [s, span] : seen) {
        const auto shard = static_cast<std::uint32_t>(s);
        const ShardShuffle::Use use = order->use(shard);
        CHECK((use.begin <= span.first && span.second < use.end));
        CHECK(order->next_use(shard, 0) == use.begin);
        CHECK(order->next_use(shard, span.second) == span.second);
        CHECK(!order->next_use(shard, use.end));
      }
    }
  }
}

TEST_CASE("shard shuffle: neighbours share a shard about 1/k of the time, not by construction", "[shard_shuffle]") {
  const std::vector<std::uint64_t> sizes(200, 500);  // 100k samples
  for (std::uint32_t k : {4u, 16u}) {
    const ShardShuffle shuffle(sizes, k, 9);
    const auto order = shuffle.epoch(0);
    std::uint64_t same = 0;
    for (std::uint64_t p = 0; p + 1 < shuffle.size(); ++p) same += order->shard_at(p) == order->shard_at(p + 1);
    const double fraction = static_cast<double>(same) / static_cast<double>(shuffle.size() - 1);
    INFO("window " << k << ": " << fraction);
    CHECK(fraction == Approx(1.0 / k).epsilon(0.15));
  }
}

namespace {

Options locality_options() {
  Options o;
  o.shard_sizes = uneven_shards();
  o.dataset_size = std::accumulate(o.shard_sizes.begin(), o.shard_sizes.end(), std::uint64_t{0});
  o.batch_size = 12;
  o.shuffle = true;
  o.shuffle_window = 3;
  o.seed = 41;
  o.epochs = 2;
  o.workers = 2;
  o.fields = {{"id", DType::u64, {}}};
  o.producer = per_sample([](const SampleRef& s) { *s.as<std::uint64_t>(0) = s.index; });
  return o;
}

using Batches = std::map<std::pair<std::uint64_t, std::uint64_t>, std::multiset<std::uint64_t>>;

// Every global step of a run of `world` ranks (global batch 12), and the ranks' states.
void run_world(std::uint32_t world, const std::optional<LoaderState>& resume, std::size_t stop_after, Batches& out,
               std::vector<LoaderState>* states) {
  for (std::uint32_t r = 0; r < world; ++r) {
    Options o = locality_options();
    o.batch_size = 12 / world;
    o.rank = r;
    o.world_size = world;
    o.workers = 1 + r % 3;
    o.resume = resume;
    Loader loader(o);
    for (std::size_t i = 0; stop_after == 0 || i < stop_after; ++i) {
      auto b = loader.next();
      if (!b) break;
      auto ids = b->field("id").as<const std::uint64_t>();
      for (std::size_t j = 0; j < b->size(); ++j) {
        REQUIRE(ids[j] == b->sample_ids()[j]);
        out[{b->epoch(), b->index()}].insert(ids[j]);
      }
    }
    if (states) states->push_back(loader.state());
  }
}

}  // namespace

TEST_CASE("shard shuffle through Loaders: the same batches with 1, 2 or 3 workers, each sample once per epoch",
          "[shard_shuffle]") {
  std::vector<std::vector<std::vector<std::uint64_t>>> runs;
  for (std::uint32_t workers : {1u, 2u, 3u}) {
    Options o = locality_options();
    o.workers = workers;
    Loader loader(o);
    std::vector<std::vector<std::uint64_t>> batches;
    std::map<std::uint64_t, std::multiset<std::uint64_t>> per_epoch;
    while (auto b = loader.next()) {
      batches.emplace_back(b->sample_ids().begin(), b->sample_ids().end());
      per_epoch[b->epoch()].insert(b->sample_ids().begin(), b->sample_ids().end());
    }
    for (const auto& [epoch, ids] : per_epoch) {
      INFO("epoch " << epoch);
      CHECK(ids.size() == o.dataset_size);
      CHECK(std::set<std::uint64_t>(ids.begin(), ids.end()).size() == o.dataset_size);
    }
    runs.push_back(std::move(batches));
  }
  CHECK(runs[0] == runs[1]);
  CHECK(runs[0] == runs[2]);
  // The plan is the shard shuffle's order, dealt in batches.
  const EpochPlan plan(locality_options());
  REQUIRE(plan.shard_shuffle() != nullptr);
  const auto order = plan.shard_shuffle()->epoch(1);
  const std::uint64_t per_epoch = plan.batches_per_epoch();
  for (std::uint64_t j = 0; j < runs[0][per_epoch].size(); ++j)
    CHECK(runs[0][per_epoch][j] == order->sample(plan.global_position(j)));
  REQUIRE(test::descendants(getpid()).empty());
}

TEST_CASE("shard shuffle: 3 ranks stopped mid-epoch resume on 2 with the same global batches", "[shard_shuffle][elastic]") {
  Batches whole, pieces;
  run_world(1, std::nullopt, 0, whole, nullptr);
  std::vector<LoaderState> states;
  run_world(3, std::nullopt, 30, pieces, &states);
  const LoaderState merged = LoaderState::merge(states);
  CHECK((merged.epoch == 0 && merged.batch == 30));
  CHECK(merged.shuffle_window == 3);
  run_world(2, LoaderState::from_json(merged.to_json()), 0, pieces, nullptr);
  // Steps whose 12 samples divide among the ranks are the same multisets on any world size.
  for (const auto& [key, samples] : whole) {
    INFO("epoch " << key.first << ", step " << key.second);
    if (samples.size() == 12) CHECK(pieces.at(key) == samples);
  }
  REQUIRE(test::descendants(getpid()).empty());
}

TEST_CASE("shard shuffle: a state names its window and shard layout, and another one is refused", "[shard_shuffle][state]") {
  Options o = locality_options();
  std::string saved;
  {
    Loader loader(o);
    loader.next();
    saved = loader.state().to_json();
  }
  CHECK_THAT(saved, Catch::Contains("\"shuffle_window\":3"));
  const LoaderState state = LoaderState::from_json(saved);
  CHECK(state.shard_layout == ShardShuffle::hash_layout(o.shard_sizes));
  o.resume = state;
  o.shuffle_window = 4;
  CHECK_THROWS_WITH(Loader(o), Catch::Contains("shuffle_window = 3 but options.shuffle_window is 4"));
  o = locality_options();
  o.resume = state;
  std::swap(o.shard_sizes[0], o.shard_sizes[1]);
  CHECK_THROWS_WITH(Loader(o), Catch::Contains("shard_layout"));
  // A state of the global shuffle does not resume a locality run.
  o = locality_options();
  o.shuffle_window = 0;
  std::string global;
  {
    Loader loader(o);
    global = loader.state().to_json();
  }
  CHECK_THAT(global, !Catch::Contains("shuffle_window"));
  o.shuffle_window = 3;
  o.resume = LoaderState::from_json(global);
  CHECK_THROWS_WITH(Loader(o), Catch::Contains("shuffle_window = 0"));
  o = locality_options();
  o.shard_sizes.clear();
  CHECK_THROWS_WITH(EpochPlan(o), Catch::Contains("options.shuffle_window is 3 but the data set has no shards"));
  o.shard_sizes = {1, 2};
  CHECK_THROWS_WITH(EpochPlan(o), Catch::Contains("options.shard_sizes add up to 3 samples"));
  REQUIRE(test::descendants(getpid()).empty());
}

TEST_CASE("shard shuffle: a batch's samples at once are its samples one by one", "[shard_shuffle]") {
  // Positions that cross windows, go back, repeat and stand alone.
  const ShardShuffle shuffle({10, 0, 33, 7, 100, 1, 64}, 2, 3);
  const auto epoch = shuffle.epoch(4);
  std::vector<std::uint64_t> positions(shuffle.size());
  std::iota(positions.begin(), positions.end(), 0);
  for (std::uint64_t p : {200ull, 3ull, 3ull, 150ull, 0ull}) positions.push_back(p);
  std::vector<std::uint64_t> samples = positions;
  epoch->samples(samples);
  for (std::size_t i = 0; i < positions.size(); ++i) CHECK(samples[i] == epoch->sample(positions[i]));
  std::vector<std::uint64_t> past = {shuffle.size()};
  CHECK_THROWS_WITH(epoch->samples(past), Catch::Contains("past the epoch"));
}
