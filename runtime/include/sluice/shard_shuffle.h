// sluice/shard_shuffle.h: a shuffle that keeps shard locality.
//
// The global shuffle (sluice/plan.h) may read any sample at any moment: over
// remote shards, a node with room for k shards downloads nearly a shard per
// sample. This order reads shards a window at a time instead. For epoch e:
//   1. the shards are permuted (a keyed bijection of (seed, e));
//   2. the epoch's sample sequence is the shards' samples, shard after shard,
//      in that order;
//   3. the sequence is cut into windows of `window` consecutive shards (k),
//      and each window's samples are permuted among themselves (a keyed
//      bijection of (seed, e, window number)).
// Position p of the epoch's global order is a pure function of (shard sizes,
// k, seed, e, p): nothing is stored per sample, and the order does not depend
// on the worker count or the world size. EpochPlan deals positions to ranks
// exactly as it deals the global shuffle's (rank r takes r, r + W, ...), so
// elasticity and resume carry over unchanged.
//
// Locality: every position of window w reads one of w's k shards, and each
// shard's samples all lie in its window's positions. A reader that consumes
// positions in order therefore needs only the current window's shards: with a
// cache of k shards evicting by next use (or LRU), each shard is loaded once
// per epoch. Readers that work ahead (several workers, read-ahead, ranks a few
// steps apart) touch two windows at a window's end: a cache of 2k shards then
// keeps the once-per-epoch bound as long as the positions in flight span less
// than a window. runtime/bench/shard_loads_bench measures both.
//
// Quality (docs/guarantees.md has the measured figures): neighbours in the
// order come from the same shard with probability about 1/k (the global
// shuffle: 1/shards), and a shard's samples are spread over its window, about
// k shards' worth of positions, not over the whole epoch.
//
// The cache's questions: Epoch::use(shard) gives the positions during which a
// shard is read (its window), next_use(shard, p) the first position >= p of
// that span (nullopt once it has passed: the shard is not read again this
// epoch), and shards_between(a, b) the shards read by positions [a, b).
// Positions here are global (all ranks); rank r's position q of a world of W
// is q * W + r (EpochPlan::global_position), modulo the dataset size.
//
// Thread safety: ShardShuffle and Epoch are immutable; their const methods
// may be called concurrently. epoch() keeps the last epoch it built in a
// thread-local cache (no lock, so it is safe in forked children).
#pragma once

#include "sluice/export.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

namespace sluice {

class SLUICE_API ShardShuffle {
 public:
  // shard_sizes: samples per shard, shards in dataset order (shard s holds
  // the dataset indices [sum of the sizes before s, + its size)). window >= 1.
  // Throws sluice::Error when shard_sizes is empty, all zero, or window is 0.
  ShardShuffle(std::vector<std::uint64_t> shard_sizes, std::uint32_t window, std::uint64_t seed);

  std::uint64_t size() const { return starts_.back(); }  // samples
  std::uint32_t shards() const { return static_cast<std::uint32_t>(sizes_.size()); }
  std::uint32_t window() const { return window_; }
  // A fingerprint of the shard sizes (states record it: another layout is another order).
  std::uint64_t layout_hash() const { return layout_hash_; }
  static std::uint64_t hash_layout(const std::vector<std::uint64_t>& shard_sizes);

  // Where the shard's samples are read: global positions [begin, end).
  struct Use {
    std::uint64_t begin = 0, end = 0;
  };

  // One epoch's order: built in O(shards) time and memory.
  class SLUICE_API Epoch {
   public:
    // The dataset index at global position p (< size()).
    std::uint64_t sample(std::uint64_t p) const;
    // sample(p) for each p of `positions`, in place: a batch's positions
    // mostly share a window, whose permutation is then made once for them.
    void samples(std::span<std::uint64_t> positions) const;
    // The shard of that sample.
    std::uint32_t shard_at(std::uint64_t p) const;
    // The window of shard s, as positions.
    Use use(std::uint32_t shard) const;
    // The first position >= from at which shard s may be read; nullopt when
    // its window has passed (not read again this epoch).
    std::optional<std::uint64_t> next_use(std::uint32_t shard, std::uint64_t from) const;
    // The shards of the windows that positions [begin, end) fall in (every
    // shard those positions may read, and only those), in reading order.
    std::vector<std::uint32_t> shards_between(std::uint64_t begin, std::uint64_t end) const;
    // The shards in the order this epoch reads them.
    const std::vector<std::uint32_t>& shard_order() const { return order_; }

   private:
    friend class ShardShuffle;
    std::uint32_t slot_at(std::uint64_t p) const;  // slot in order_ of the shard position p's window starts
    const ShardShuffle* owner_ = nullptr;
    std::uint64_t epoch_ = 0;
    std::vector<std::uint32_t> order_;     // slot -> shard
    std::vector<std::uint32_t> slot_of_;   // shard -> slot
    std::vector<std::uint64_t> prefix_;    // position where slot j's samples begin; back() = size()
  };

  // Epoch e's order. The returned table keeps a reference to this object's
  // data: it must not outlive the ShardShuffle.
  std::shared_ptr<const Epoch> epoch(std::uint64_t e) const;

 private:
  std::uint64_t window_key(std::uint64_t epoch, std::uint64_t w) const;
  std::vector<std::uint64_t> sizes_;
  std::vector<std::uint64_t> starts_;  // dataset index of each shard's first sample; back() = size()
  std::uint32_t window_;
  std::uint64_t seed_;
  std::uint64_t layout_hash_;
  std::uint64_t id_;  // identifies this object's data in the thread-local cache
};

}  // namespace sluice
