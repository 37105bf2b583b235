// Checkpoint and resume: a loader built from state() continues the run exactly.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <map>
#include <optional>
#include <set>
#include <vector>

#include "sluice/error.h"
#include "sluice/loader.h"
#include "sluice/plan.h"
#include "sluice/producer.h"
#include "sluice/state.h"
#include "test_support.h"

using namespace sluice;

namespace {

Options resumable_options() {
  Options o;
  o.dataset_size = 230;
  o.batch_size = 16;
  o.shuffle = true;
  o.seed = 77;
  o.epochs = 3;
  o.workers = 2;
  o.fields = {{"id", DType::u64, {}}, {"sq", DType::f64, {2}}};
  o.producer = per_sample([](const SampleRef& s) {
    *s.as<std::uint64_t>(0) = s.index;
    s.as<double>(1)[0] = static_cast<double>(s.index) * s.index;
    s.as<double>(1)[1] = -static_cast<double>(s.index);
  });
  return o;
}

struct Seen {
  std::uint64_t epoch, index;
  std::vector<std::uint64_t> ids;
  std::vector<double> sq;
  bool operator==(const Seen&) const = default;
};

Seen see(const Batch& b) {
  auto sq = b.field("sq").as<const double>();
  return {b.epoch(), b.index(), {b.sample_ids().begin(), b.sample_ids().end()}, {sq.begin(), sq.end()}};
}

}  // namespace

TEST_CASE("a resumed loader delivers exactly what the uninterrupted run would, with another worker count",
          "[state]") {
  Options o = resumable_options();
  std::vector<Seen> whole;
  {
    Loader loader(o);
    while (auto b = loader.next()) whole.push_back(see(*b));
  }
  REQUIRE(whole.size() == 3 * 15);

  const std::size_t cut = GENERATE(0u, 1u, 20u, 29u, 30u, 44u);
  std::vector<Seen> resumed;
  std::string saved;
  {
    Loader loader(o);
    for (std::size_t i = 0; i < cut; ++i) resumed.push_back(see(*loader.next()));
    saved = loader.state().to_json();
  }
  LoaderState state = LoaderState::from_json(saved);
  REQUIRE(state.epoch == cut / 15);
  REQUIRE(state.batch == cut % 15);
  o.resume = state;
  o.workers = 3;
  o.slots = 4;
  {
    Loader loader(o);
    REQUIRE(loader.current_epoch() == cut / 15);
    while (auto b = loader.next()) resumed.push_back(see(*b));
  }
  REQUIRE(resumed == whole);
}

TEST_CASE("an unordered run resumes without losing or repeating a batch", "[state]") {
  Options o = resumable_options();
  o.ordered = false;
  o.workers = 4;
  o.producer = per_sample([](const SampleRef& s) {
    if (s.index % 7 == 0 && s.position == 0) usleep(2000);  // completions out of order
    *s.as<std::uint64_t>(0) = s.index;
  });
  std::multiset<std::pair<std::uint64_t, std::uint64_t>> batches;
  LoaderState state;
  {
    Loader loader(o);
    for (int i = 0; i < 22; ++i) {
      auto b = loader.next();
      batches.insert({b->epoch(), b->index()});
    }
    state = LoaderState::from_json(loader.state().to_json());
  }
  o.resume = state;
  o.ordered = true;
  o.workers = 1;
  {
    Loader loader(o);
    while (auto b = loader.next()) batches.insert({b->epoch(), b->index()});
  }
  REQUIRE(batches.size() == 45);
  REQUIRE(std::set<std::pair<std::uint64_t, std::uint64_t>>(batches.begin(), batches.end()).size() == 45);
}

TEST_CASE("resuming with a different plan is refused, naming the option", "[state]") {
  Options o = resumable_options();
  LoaderState state;
  {
    Loader loader(o);
    loader.next();
    state = loader.state();
  }
  o.resume = state;
  o.seed = 78;
  REQUIRE_THROWS_WITH(Loader(o), Catch::Contains("options.seed") && Catch::Contains("77"));
  o.seed = 77;
  o.batch_size = 8;
  REQUIRE_THROWS_WITH(Loader(o), Catch::Contains("options.batch_size"));
  REQUIRE(test::descendants(getpid()).empty());
}

TEST_CASE("loader state JSON round-trips and bad JSON names the problem", "[state]") {
  LoaderState s;
  s.seed = 18446744073709551615ULL;
  s.dataset_size = 1ULL << 40;
  s.batch_size = 256;
  s.shuffle = true;
  s.rank = 3;
  s.world_size = 8;
  s.shard_policy = "drop";
  s.epoch = 12;
  s.batch = 7;
  s.delivered_ahead = {9, 11};
  s.skipped_samples = {5};
  REQUIRE(LoaderState::from_json(s.to_json()) == s);
  REQUIRE_THROWS_WITH(LoaderState::from_json("{\"sluice_state\":1}"), Catch::Contains("missing key \"seed\""));
  REQUIRE_THROWS_WITH(LoaderState::from_json("{\"sluice_state\":1, \"seed\": -1}"), Catch::Contains("seed"));
  REQUIRE_THROWS_WITH(LoaderState::from_json("{\"sluice_state\":"), Catch::Contains("byte"));
}

TEST_CASE("a state is checked completely before a resume uses it", "[state]") {
  Options o = resumable_options();
  LoaderState good;
  {
    Loader loader(o);
    loader.next();
    good = loader.state();
  }
  LoaderState s = good;
  s.epoch = std::uint64_t{1} << 61;  // far past the run's epochs
  o.resume = s;
  REQUIRE_THROWS_WITH(Loader(o), Catch::Contains("past the end of a run"));
  s = good;
  s.epoch = o.epochs;  // the run's end is a valid, finished position
  s.batch = 0;
  o.resume = s;
  REQUIRE_FALSE(Loader(o).next());
  s = good;
  s.batch = 1;
  s.delivered_ahead = {3, 3};
  o.resume = s;
  REQUIRE_THROWS_WITH(Loader(o), Catch::Contains("delivered_ahead holds batch 3 twice"));
  s = good;
  s.skipped_samples = {o.dataset_size};
  o.resume = s;
  REQUIRE_THROWS_WITH(Loader(o), Catch::Contains("skipped_samples holds sample"));
  REQUIRE(test::descendants(getpid()).empty());
}

namespace {

// The state rank `rank` of a world of `world` saved at (epoch, batch).
LoaderState rank_state(std::uint32_t rank, std::uint32_t world, std::uint64_t epoch, std::uint64_t batch) {
  LoaderState s;
  s.seed = 77;
  s.dataset_size = 230;
  s.batch_size = 4;
  s.shuffle = true;
  s.rank = rank;
  s.world_size = world;
  s.epoch = epoch;
  s.batch = batch;
  return s;
}

// Every global batch (epoch, step) of a run of `world` ranks with global batch
// 12, as the sorted sample ids and their content, from (epoch, batch) `from`
// of a resume state on (or from the start).
using GlobalBatches = std::map<std::pair<std::uint64_t, std::uint64_t>, std::multiset<std::pair<std::uint64_t, double>>>;

void run_ranks(std::uint32_t world, const std::optional<LoaderState>& resume, std::size_t stop_after,
               GlobalBatches& out, std::vector<LoaderState>* states) {
  for (std::uint32_t r = 0; r < world; ++r) {
    Options o = resumable_options();
    o.batch_size = 12 / world;
    o.rank = r;
    o.world_size = world;
    o.workers = 1 + r % 2;
    o.resume = resume;
    Loader loader(o);
    for (std::size_t i = 0; stop_after == 0 || i < stop_after + r % 2; ++i) {  // ranks stop at different steps
      auto b = loader.next();
      if (!b) break;
      auto sq = b->field("sq").as<const double>();
      for (std::size_t j = 0; j < b->size(); ++j) out[{b->epoch(), b->index()}].insert({b->sample_ids()[j], sq[2 * j]});
    }
    if (states) states->push_back(loader.state());
  }
}

}  // namespace

TEST_CASE("the ranks' batch s together are global step s of the epoch's order, for any world size",
          "[state][elastic]") {
  const std::uint64_t n = 230, g = 12;
  auto plan_of = [&](std::uint32_t rank, std::uint32_t world, ShardPolicy policy, bool drop_last) {
    Options o;
    o.dataset_size = n;
    o.batch_size = static_cast<std::uint32_t>(g / world);
    o.shuffle = true;
    o.seed = 77;
    o.rank = rank;
    o.world_size = world;
    o.shard_policy = policy;
    o.drop_last = drop_last;
    return EpochPlan(o);
  };
  const EpochPlan order = plan_of(0, 1, ShardPolicy::pad, false);  // one rank: the epoch's order itself
  for (std::uint32_t world : {1u, 2u, 3u, 4u, 6u, 12u}) {
    for (ShardPolicy policy : {ShardPolicy::pad, ShardPolicy::drop}) {
      for (bool drop_last : {false, true}) {
        INFO("world " << world << (policy == ShardPolicy::pad ? " pad" : " drop") << (drop_last ? " drop_last" : ""));
        const std::uint64_t per_rank = policy == ShardPolicy::pad ? (n + world - 1) / world : n / world;
        std::uint64_t position = 0;
        for (std::uint64_t epoch : {0u, 1u}) {
          position = 0;
          const std::uint64_t steps = plan_of(0, world, policy, drop_last).batches_per_epoch();
          for (std::uint64_t step = 0; step < steps; ++step) {
            std::multiset<std::uint64_t> got, want;
            for (std::uint32_t r = 0; r < world; ++r) {
              const EpochPlan plan = plan_of(r, world, policy, drop_last);
              std::vector<std::uint64_t> ids(plan.batch_length(step));
              plan.batch_samples(epoch, step, ids);
              got.insert(ids.begin(), ids.end());
            }
            for (std::size_t k = 0; k < got.size(); ++k, ++position) want.insert(order.sample(epoch, position % n));
            REQUIRE(position == std::min((step + 1) * g, per_rank * world));
            REQUIRE(got == want);
          }
        }
        // pad: the last step repeats (-N mod W) samples from the start of the order; drop: the
        // last N mod W are left out; drop_last: only whole global steps.
        if (drop_last) {
          CHECK(position == per_rank / (g / world) * g);
        } else {
          CHECK(position == (policy == ShardPolicy::pad ? n + (world - n % world) % world : n - n % world));
        }
      }
    }
  }
}

TEST_CASE("merge: the states of all ranks become the run's global position", "[state][elastic]") {
  std::vector<LoaderState> ranks = {rank_state(2, 3, 0, 7), rank_state(0, 3, 0, 9), rank_state(1, 3, 1, 0)};
  std::string note;
  LoaderState m = LoaderState::merge(ranks, &note);
  CHECK(m.all_ranks);
  CHECK(m.rank == 0);
  CHECK(m.world_size == 3);
  CHECK((m.epoch == 0 && m.batch == 7));
  // 230 samples on 3 ranks: 77 per rank, 20 batches of 4; rank 0 is 2 ahead, rank 1 is 13 ahead.
  CHECK_THAT(note, Catch::Contains("resumes at epoch 0, batch 7 (rank 2, the slowest)") &&
                       Catch::Contains("15 per-rank batches already delivered will be delivered again"));
  CHECK(LoaderState::from_json(m.to_json()) == m);
  CHECK_THAT(m.to_json(), Catch::Contains("\"all_ranks\":true"));
  CHECK_THAT(ranks[0].to_json(), !Catch::Contains("all_ranks"));  // files of one rank keep their old form

  std::vector<LoaderState> same = {rank_state(1, 2, 0, 3), rank_state(0, 2, 0, 3)};
  same[0].skipped_samples = {9, 4};
  same[1].skipped_samples = {4, 1};
  m = LoaderState::merge(same, &note);
  CHECK(m.skipped_samples == std::vector<std::uint64_t>{1, 4, 9});
  CHECK_THAT(note, Catch::Contains("all 2 ranks stopped at epoch 0, batch 3; no batch is delivered twice"));
}

TEST_CASE("merge: states that disagree or miss a rank are refused, naming what is wrong", "[state][elastic]") {
  std::vector<LoaderState> ranks = {rank_state(0, 3, 0, 7), rank_state(1, 3, 0, 7), rank_state(2, 3, 0, 7)};
  REQUIRE_NOTHROW(LoaderState::merge(ranks));
  auto refused = [&](auto change, const std::string& what) {
    std::vector<LoaderState> bad = ranks;
    change(bad);
    REQUIRE_THROWS_WITH(LoaderState::merge(bad), Catch::Contains(what));
  };
  refused([](auto& v) { v[1].seed = 78; }, "rank 1's state has seed = 78 but rank 0's state has 77");
  refused([](auto& v) { v[2].dataset_size = 231; }, "dataset_size = 231");
  refused([](auto& v) { v[2].batch_size = 5; }, "batch_size = 5");
  refused([](auto& v) { v[2].shuffle = false; }, "shuffle = false");
  refused([](auto& v) { v[2].drop_last = true; }, "drop_last = true");
  refused([](auto& v) { v[2].shard_policy = "drop"; }, "shard_policy = drop");
  refused([](auto& v) { v[2].world_size = 4; }, "world_size = 4");
  refused([](auto& v) { v.pop_back(); }, "rank 2's state is missing (2 of 3 ranks given)");
  refused([](auto& v) { v[2].rank = 1; }, "rank 1's state is given twice");
  refused([](auto& v) { v[2].rank = 3; }, "a state has rank 3, not below its world_size 3");
  refused([](auto& v) { v.clear(); }, "no state given");
}

TEST_CASE("merge: an unordered run keeps the later steps every rank delivered", "[state][elastic]") {
  std::vector<LoaderState> ranks = {rank_state(0, 3, 0, 5), rank_state(1, 3, 0, 7), rank_state(2, 3, 0, 5)};
  ranks[0].delivered_ahead = {7, 9, 6};
  ranks[1].delivered_ahead = {9, 8};
  ranks[2].delivered_ahead = {6, 9};
  std::string note;
  LoaderState m = LoaderState::merge(ranks, &note);
  CHECK((m.epoch == 0 && m.batch == 5));
  CHECK(m.delivered_ahead == std::vector<std::uint64_t>{6, 9});  // 6: rank 1 passed it; 9: all listed it
  // Delivered from step 5: rank 0 {6,7,9}, rank 1 {5,6,8,9}, rank 2 {6,9}; 6 and 9 are skipped on resume.
  CHECK_THAT(note, Catch::Contains("3 per-rank batches already delivered will be delivered again"));
}

TEST_CASE("elastic resume: 3 ranks stopped mid-epoch continue on 2, the global batches of one rank", "[state][elastic]") {
  GlobalBatches whole, pieces;
  run_ranks(1, std::nullopt, 0, whole, nullptr);
  REQUIRE(whole.size() == 3 * 20);  // 230 samples in steps of 12: 19 full, one of 2

  std::vector<LoaderState> states;
  run_ranks(3, std::nullopt, 13, pieces, &states);
  std::string note;
  LoaderState merged = LoaderState::merge(states, &note);
  CHECK((merged.epoch == 0 && merged.batch == 13));
  CHECK_THAT(note, Catch::Contains("1 per-rank batch already"));  // rank 1 went one step further
  pieces.erase({0, 13});  // delivered by rank 1 only: the resumed run delivers it again, whole
  run_ranks(2, LoaderState::from_json(merged.to_json()), 0, pieces, nullptr);
  // 2 ranks of 115 samples pad nothing, so even the last step of each epoch is 1 rank's.
  for (const auto& [key, samples] : whole) {
    INFO("epoch " << key.first << ", step " << key.second);
    CHECK(pieces.at(key) == samples);
  }
  CHECK(pieces.size() == whole.size());
}

TEST_CASE("elastic resume: one rank's state refuses another world size, and a global batch change is named",
          "[state][elastic]") {
  Options o = resumable_options();
  o.batch_size = 4;
  o.world_size = 3;
  o.rank = 1;
  o.resume = rank_state(1, 3, 0, 2);
  o.world_size = 2;
  o.batch_size = 6;
  o.rank = 0;
  REQUIRE_THROWS_WITH(Loader(o), Catch::Contains("pass the states of all ranks"));
  o.resume->all_ranks = true;
  o.batch_size = 5;
  REQUIRE_THROWS_WITH(Loader(o), Catch::Contains("global batch of 12 (batch_size 4 x world_size 3)") &&
                                      Catch::Contains("10 (batch_size 5 x world_size 2)"));
  o.batch_size = 6;
  Loader fine(o);
  REQUIRE(fine.next()->index() == 2);
  o.resume->all_ranks = false;  // the same world size: the rank must match, as before
  o.world_size = 3;
  o.batch_size = 4;
  REQUIRE_THROWS_WITH(Loader(o), Catch::Contains("options.rank"));
}

TEST_CASE("The policies' names read back as the same policies, and no other text is one", "[state]") {
  for (ShardPolicy p : {ShardPolicy::pad, ShardPolicy::drop}) CHECK(parse_shard_policy(name_of(p)) == p);
  for (OnError e : {OnError::fail, OnError::skip}) CHECK(parse_on_error(name_of(e)) == e);
  for (SkipFill f : {SkipFill::shrink, SkipFill::repeat}) CHECK(parse_skip_fill(name_of(f)) == f);
  CHECK(std::string(name_of(ShardPolicy::pad)) == LoaderState{}.shard_policy);  // a state's default
  for (const char* text : {"", "Pad", "skip ", "fail,skip", "repeat"}) {
    CHECK_FALSE(parse_shard_policy(text));
    CHECK_FALSE(parse_on_error(text));
  }
  CHECK_FALSE(parse_skip_fill("skip"));
}
