#include <catch2/catch.hpp>

#include <algorithm>
#include <numeric>
#include <set>
#include <vector>

#include "sluice/error.h"
#include "sluice/plan.h"

using namespace sluice;

TEST_CASE("a permutation is a bijection of 0..n-1 for every small n", "[plan]") {
  for (std::uint64_t n = 1; n <= 600; ++n) {
    Permutation p(n, n * 31 + 7);
    std::vector<bool> hit(n, false);
    for (std::uint64_t i = 0; i < n; ++i) {
      std::uint64_t v = p(i);
      REQUIRE(v < n);
      REQUIRE_FALSE(hit[v]);
      hit[v] = true;
    }
  }
}

TEST_CASE("a permutation is a bijection for a large odd n and depends on its key", "[plan]") {
  const std::uint64_t n = 1'000'003;
  Permutation a(n, 1), b(n, 2), a2(n, 1);
  std::vector<bool> hit(n, false);
  std::uint64_t same_as_b = 0, fixed_points = 0;
  for (std::uint64_t i = 0; i < n; ++i) {
    std::uint64_t v = a(i);
    REQUIRE(v < n);
    REQUIRE_FALSE(hit[v]);
    hit[v] = true;
    REQUIRE(a2(i) == v);  // deterministic
    same_as_b += (b(i) == v);
    fixed_points += (v == i);
  }
  // Two keys agree, and a permutation fixes a point, about once in n: a
  // handful at most.
  REQUIRE(same_as_b < 20);
  REQUIRE(fixed_points < 20);
}

TEST_CASE("a permutation of a trillion samples needs no table", "[plan]") {
  const std::uint64_t n = 1'000'000'000'000ULL;
  Permutation p(n, 99);
  std::set<std::uint64_t> seen;
  for (std::uint64_t i = 0; i < 10000; ++i) {
    std::uint64_t v = p(i * 99991);
    REQUIRE(v < n);
    REQUIRE(seen.insert(v).second);
  }
  REQUIRE(sizeof(Permutation) <= 64);
}

namespace {
Options plan_options(std::uint64_t n, std::uint32_t b) {
  Options o;
  o.dataset_size = n;
  o.batch_size = b;
  return o;
}
}  // namespace

TEST_CASE("sequential plans, ragged and dropped last batches", "[plan]") {
  Options o = plan_options(10, 4);
  EpochPlan keep(o);
  REQUIRE(keep.batches_per_epoch() == 3);
  REQUIRE(keep.batch_length(2) == 2);
  REQUIRE(keep.samples_per_epoch() == 10);
  std::vector<std::uint64_t> ids(4);
  keep.batch_samples(5, 2, ids);
  REQUIRE(ids[0] == 8);
  REQUIRE(ids[1] == 9);
  o.drop_last = true;
  EpochPlan drop(o);
  REQUIRE(drop.batches_per_epoch() == 2);
  REQUIRE(drop.samples_per_epoch() == 8);
}

TEST_CASE("shuffled plans differ per epoch and repeat per seed", "[plan]") {
  Options o = plan_options(1000, 10);
  o.shuffle = true;
  o.seed = 5;
  EpochPlan a(o), b(o);
  o.seed = 6;
  EpochPlan c(o);
  std::vector<std::uint64_t> e0, e1, again, other;
  for (std::uint64_t i = 0; i < 1000; ++i) {
    e0.push_back(a.sample(0, i));
    e1.push_back(a.sample(1, i));
    again.push_back(b.sample(0, i));
    other.push_back(c.sample(0, i));
  }
  REQUIRE(e0 == again);
  REQUIRE(e0 != e1);
  REQUIRE(e0 != other);
  std::vector<std::uint64_t> sorted = e1;
  std::sort(sorted.begin(), sorted.end());
  std::vector<std::uint64_t> iota(1000);
  std::iota(iota.begin(), iota.end(), 0);
  REQUIRE(sorted == iota);
}

TEST_CASE("shards are disjoint, cover the epoch and have equal batch counts", "[plan][shard]") {
  const std::uint64_t n = GENERATE(97u, 100u, 1001u);
  const std::uint32_t world = GENERATE(1u, 3u, 4u, 8u);
  const auto policy = GENERATE(ShardPolicy::pad, ShardPolicy::drop);
  const bool shuffle = GENERATE(false, true);
  CAPTURE(n, world, policy == ShardPolicy::pad, shuffle);
  std::vector<std::uint64_t> all;
  std::uint64_t batches = 0;
  for (std::uint32_t rank = 0; rank < world; ++rank) {
    Options o = plan_options(n, 6);
    o.world_size = world;
    o.rank = rank;
    o.shard_policy = policy;
    o.shuffle = shuffle;
    o.seed = 11;
    EpochPlan p(o);
    if (rank == 0) batches = p.batches_per_epoch();
    REQUIRE(p.batches_per_epoch() == batches);
    std::vector<std::uint64_t> ids(6);
    for (std::uint64_t b = 0; b < p.batches_per_epoch(); ++b) {
      p.batch_samples(2, b, ids);
      all.insert(all.end(), ids.begin(), ids.begin() + p.batch_length(b));
    }
  }
  std::sort(all.begin(), all.end());
  const std::uint64_t per_rank = policy == ShardPolicy::pad ? (n + world - 1) / world : n / world;
  REQUIRE(all.size() == per_rank * world);
  std::set<std::uint64_t> distinct(all.begin(), all.end());
  if (policy == ShardPolicy::pad) {
    REQUIRE(distinct.size() == n);  // every sample; the padding repeats some
    REQUIRE(all.size() - n < world);
  } else {
    REQUIRE(distinct.size() == all.size());  // disjoint
    REQUIRE(n - all.size() < world);
  }
}

TEST_CASE("impossible plans are refused with the option named", "[plan]") {
  Options o = plan_options(10, 4);
  o.rank = 2;
  o.world_size = 2;
  REQUIRE_THROWS_WITH(EpochPlan(o), Catch::Contains("options.rank"));
  o = plan_options(10, 0);
  REQUIRE_THROWS_WITH(EpochPlan(o), Catch::Contains("batch_size"));
  o = plan_options(2, 1);
  o.world_size = 3;
  o.shard_policy = ShardPolicy::drop;
  REQUIRE_THROWS_WITH(EpochPlan(o), Catch::Contains("world_size"));
}

TEST_CASE("a permutation applied to many values at once gives each value's image", "[plan]") {
  // Domains just above a power of four walk cycles most; 8 values go
  // through the network together, the rest one by one.
  for (std::uint64_t n : {1ull, 2ull, 7ull, 17ull, 65ull, 1000ull, 262145ull}) {
    const Permutation p(n, n ^ 99);
    std::vector<std::uint64_t> values;
    for (std::uint64_t i = 0; i < std::min<std::uint64_t>(n, 1000); ++i) values.push_back((i * 7919) % n);
    std::vector<std::uint64_t> applied = values;
    p.apply(applied);
    for (std::size_t i = 0; i < values.size(); ++i) REQUIRE(applied[i] == p(values[i]));
  }
}
