// shard_loads_bench: how many shard loads an epoch costs a node whose cache
// holds a few shards, under the global shuffle and under the locality shuffle
// (sluice/shard_shuffle.h), and how well each mixes.
//
// It reads one epoch of the plan's global order, position by position, as a
// node's readers would, through a cache of whole shards, and counts loads
// (a load = a shard downloaded; bytes = loads x shard size). Readers that work
// ahead are modelled by --disorder R: positions are consumed in a random
// order within consecutive blocks of R (the span of reads in flight). Caches:
// LRU, and "next use", which evicts the shard the plan will read last (or
// never again), asked through ShardShuffle::Epoch::next_use.
//
// Quality, for each order: how often neighbours in the order come from the
// same shard, the mean distance in dataset index between neighbours (as a
// fraction of N; a uniform shuffle gives 1/3), and over how much of the epoch
// a shard's samples are spread (last minus first position, as a fraction of N).
//
//   shard_loads_bench [--shards 1000] [--per-shard 1000] [--sizes FILE] [--window 8]
//                     [--cache K] [--disorder R] [--shard-mib 64] [--seed 1] [--epoch 0]
// --sizes FILE: one shard's sample count per line (a real data set's layout,
// e.g. from `sluice inspect`), instead of --shards x --per-shard.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <list>
#include <numeric>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "sluice/error.h"
#include "sluice/plan.h"
#include "sluice/shard_shuffle.h"

namespace {

struct Args {
  std::uint64_t shards = 1000, per_shard = 1000, window = 8, cache = 0, disorder = 1, seed = 1, epoch = 0;
  double shard_mib = 64;
  std::string sizes_file;
};

// A cache of whole shards; returns whether the access loaded the shard.
class LruCache {
 public:
  explicit LruCache(std::size_t capacity) : capacity_(capacity) {}
  bool access(std::uint32_t shard) {
    auto it = where_.find(shard);
    if (it != where_.end()) {
      order_.splice(order_.begin(), order_, it->second);
      return false;
    }
    if (where_.size() == capacity_) {
      where_.erase(order_.back());
      order_.pop_back();
    }
    order_.push_front(shard);
    where_[shard] = order_.begin();
    return true;
  }

 private:
  std::size_t capacity_;
  std::list<std::uint32_t> order_;
  std::unordered_map<std::uint32_t, std::list<std::uint32_t>::iterator> where_;
};

// Evicts the shard whose next use (by the plan) is farthest, or that is not
// used again this epoch. For the global shuffle there is no such table: the
// caller passes none, and this degenerates to evicting the oldest.
class NextUseCache {
 public:
  NextUseCache(std::size_t capacity, const sluice::ShardShuffle::Epoch* plan) : capacity_(capacity), plan_(plan) {}
  bool access(std::uint32_t shard, std::uint64_t position) {
    if (std::find(held_.begin(), held_.end(), shard) != held_.end()) return false;
    if (held_.size() == capacity_) {
      std::size_t victim = 0;
      std::uint64_t farthest = 0;
      for (std::size_t i = 0; i < held_.size(); ++i) {
        const auto next = plan_ ? plan_->next_use(held_[i], position) : std::nullopt;
        const std::uint64_t when = next ? *next : UINT64_MAX;
        if (when >= farthest) {
          farthest = when;
          victim = i;
        }
      }
      held_.erase(held_.begin() + static_cast<std::ptrdiff_t>(victim));
    }
    held_.push_back(shard);
    return true;
  }

 private:
  std::size_t capacity_;
  const sluice::ShardShuffle::Epoch* plan_;
  std::vector<std::uint32_t> held_;
};

struct Figures {
  std::uint64_t lru = 0, lru2 = 0, next_use = 0;
  double same_shard = 0, neighbour_distance = 0, spread = 0;
};

Figures measure(const sluice::EpochPlan& plan, const std::vector<std::uint64_t>& starts, const Args& a,
                std::uint64_t n, std::uint64_t cache) {
  auto shard_of = [&](std::uint64_t index) {
    return static_cast<std::uint32_t>(std::upper_bound(starts.begin(), starts.end(), index) - starts.begin() - 1);
  };
  std::vector<std::uint64_t> order(n);
  for (std::uint64_t p = 0; p < n; ++p) order[p] = plan.sample(a.epoch, p);
  Figures f;
  std::vector<std::uint64_t> first(starts.size(), UINT64_MAX), last(starts.size(), 0);
  for (std::uint64_t p = 0; p < n; ++p) {
    const std::uint32_t s = shard_of(order[p]);
    first[s] = std::min(first[s], p);
    last[s] = p;
    if (p + 1 < n) {
      f.same_shard += s == shard_of(order[p + 1]);
      const std::uint64_t d = order[p] > order[p + 1] ? order[p] - order[p + 1] : order[p + 1] - order[p];
      f.neighbour_distance += static_cast<double>(d) / static_cast<double>(n);
    }
  }
  f.same_shard /= static_cast<double>(n - 1);
  f.neighbour_distance /= static_cast<double>(n - 1);
  std::uint64_t used = 0;
  for (std::size_t s = 0; s + 1 < starts.size(); ++s) {
    if (first[s] == UINT64_MAX) continue;
    f.spread += static_cast<double>(last[s] - first[s] + 1) / static_cast<double>(n);
    ++used;
  }
  f.spread /= static_cast<double>(used);

  // Consumption order: blocks of `disorder` positions, each in a random order.
  std::vector<std::uint64_t> visit(n);
  std::iota(visit.begin(), visit.end(), 0);
  std::mt19937_64 rng(a.seed);
  for (std::uint64_t b = 0; b < n; b += a.disorder)
    std::shuffle(visit.begin() + static_cast<std::ptrdiff_t>(b),
                 visit.begin() + static_cast<std::ptrdiff_t>(std::min(n, b + a.disorder)), rng);
  const auto table = plan.shard_shuffle() ? plan.shard_shuffle()->epoch(a.epoch) : nullptr;
  LruCache lru(cache), lru2(2 * cache);
  NextUseCache next(cache, table.get());
  for (std::uint64_t p : visit) {
    const std::uint32_t s = shard_of(order[p]);
    f.lru += lru.access(s);
    f.lru2 += lru2.access(s);
    f.next_use += next.access(s, p);
  }
  return f;
}

}  // namespace

int main(int argc, char** argv) try {
  Args a;
  for (int i = 1; i < argc; ++i) {
    auto value = [&](const char* name) -> const char* {
      if (std::strcmp(argv[i], name) != 0) return nullptr;
      if (i + 1 >= argc) throw sluice::Error(std::string(name) + " needs a value");
      return argv[++i];
    };
    if (const char* v = value("--shards")) a.shards = std::strtoull(v, nullptr, 10);
    else if (const char* v = value("--per-shard")) a.per_shard = std::strtoull(v, nullptr, 10);
    else if (const char* v = value("--window")) a.window = std::strtoull(v, nullptr, 10);
    else if (const char* v = value("--cache")) a.cache = std::strtoull(v, nullptr, 10);
    else if (const char* v = value("--disorder")) a.disorder = std::max<std::uint64_t>(1, std::strtoull(v, nullptr, 10));
    else if (const char* v = value("--seed")) a.seed = std::strtoull(v, nullptr, 10);
    else if (const char* v = value("--epoch")) a.epoch = std::strtoull(v, nullptr, 10);
    else if (const char* v = value("--shard-mib")) a.shard_mib = std::strtod(v, nullptr);
    else if (const char* v = value("--sizes")) a.sizes_file = v;
    else throw sluice::Error(std::string("unknown argument ") + argv[i]);
  }
  std::vector<std::uint64_t> sizes;
  if (!a.sizes_file.empty()) {
    std::ifstream in(a.sizes_file);
    if (!in) throw sluice::Error("cannot read " + a.sizes_file);
    for (std::uint64_t n; in >> n;) sizes.push_back(n);
  } else {
    sizes.assign(a.shards, a.per_shard);
  }
  std::vector<std::uint64_t> starts{0};
  for (std::uint64_t s : sizes) starts.push_back(starts.back() + s);
  const std::uint64_t n = starts.back();
  const std::uint64_t cache = a.cache ? a.cache : a.window;

  sluice::Options o;
  o.dataset_size = n;
  o.shard_sizes = sizes;
  o.shuffle = true;
  o.seed = a.seed;
  const Figures global = measure(sluice::EpochPlan(o), starts, a, n, cache);
  o.shuffle_window = static_cast<std::uint32_t>(a.window);
  const Figures local = measure(sluice::EpochPlan(o), starts, a, n, cache);

  std::printf("%zu shards, %llu samples, window %llu shards, cache %llu shards, reads in flight %llu, "
              "%.0f MiB a shard\n",
              sizes.size(), static_cast<unsigned long long>(n), static_cast<unsigned long long>(a.window),
              static_cast<unsigned long long>(cache), static_cast<unsigned long long>(a.disorder), a.shard_mib);
  std::printf("%-22s %14s %14s %14s %12s %12s %12s\n", "order", "loads LRU", "loads LRU 2x", "loads next-use",
              "same shard", "neighbour d", "shard spread");
  auto row = [&](const char* name, const Figures& f) {
    std::printf("%-22s %14llu %14llu %14llu %12.4f %12.4f %12.4f\n", name, static_cast<unsigned long long>(f.lru),
                static_cast<unsigned long long>(f.lru2), static_cast<unsigned long long>(f.next_use), f.same_shard,
                f.neighbour_distance, f.spread);
  };
  row("global shuffle", global);
  row("locality shuffle", local);
  std::printf("per epoch, LRU of %llu shards: %.1f GiB downloaded (global) vs %.1f GiB (locality), %.1fx; "
              "%zu shards = %.1f GiB once\n",
              static_cast<unsigned long long>(cache), static_cast<double>(global.lru) * a.shard_mib / 1024,
              static_cast<double>(local.lru) * a.shard_mib / 1024,
              static_cast<double>(global.lru) / static_cast<double>(std::max<std::uint64_t>(1, local.lru)), sizes.size(),
              static_cast<double>(sizes.size()) * a.shard_mib / 1024);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "shard_loads_bench: %s\n", e.what());
  return 1;
}
