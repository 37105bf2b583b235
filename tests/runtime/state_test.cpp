// Checkpoint and resume: a loader built from state() continues the run exactly.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <map>
#include <set>
#include <vector>

#include "sluice/error.h"
#include "sluice/loader.h"
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
