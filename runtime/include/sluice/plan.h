// sluice/plan.h: which samples make up each batch of each epoch.
//
// The plan is a pure function of (Options, epoch, batch): every worker computes
// its own batches' sample indices, so nothing is sent or stored per sample.
// Shuffling uses a keyed bijection over [0, N) (a Feistel network with cycle
// walking), so a permutation of 10^12 samples costs O(1) memory.
//
// Global steps (the elastic contract): rank r of W takes positions r, r + W,
// r + 2W, ... of the epoch's order, so with a global batch G = W x batch_size
// the ranks' batch s together are positions [sG, (s+1)G): the per-rank batch
// index is the global step. For a fixed G the sequence of global batches (as
// multisets of samples; per-sample randomness is keyed by the sample) is the
// same for every W dividing G, any worker count and any crash history. Only the
// tail depends on W, deterministically for each W: with shard_policy = pad the
// epoch has N + (-N mod W) positions, the last global step repeating the first
// (-N mod W) samples of the epoch's order; with drop the last N mod W positions
// are left out; the last step is ragged (fewer than G) unless drop_last, which
// keeps floor(per_rank / batch_size) whole steps. The order itself does not
// depend on W (one rank's plan is unchanged).
//
// With shuffle_window = k > 0 (and shuffle), the epoch's order is the
// locality shuffle of sluice/shard_shuffle.h instead of the global
// permutation: shards shuffled per epoch, samples shuffled within windows of k
// shards. Everything above (ranks, padding, steps) applies to it unchanged.
//
// Thread safety: const methods are safe to call concurrently.
#pragma once

#include "sluice/export.h"

#include <cstdint>
#include <memory>
#include <span>

#include "sluice/options.h"
#include "sluice/shard_shuffle.h"

namespace sluice {

// A pseudo-random bijection of [0, n) chosen by a 64-bit key.
class SLUICE_API Permutation {
 public:
  Permutation(std::uint64_t n, std::uint64_t key);
  std::uint64_t operator()(std::uint64_t i) const;  // i < n
  // operator() of each value (< n), in place: the same values, several at a
  // time (a batch's samples).
  void apply(std::span<std::uint64_t> values) const;
  std::uint64_t size() const { return n_; }

 private:
  std::uint64_t n_;
  std::uint64_t key_;
  int half_bits_;  // the domain is 2^(2 * half_bits_) >= n
  std::uint64_t half_mask_;
};

class SLUICE_API EpochPlan {
 public:
  // Throws Error on an empty plan or an impossible shard.
  explicit EpochPlan(const Options& options);

  std::uint64_t batches_per_epoch() const { return batches_; }
  std::uint64_t samples_per_epoch() const;  // this rank's samples in one epoch
  std::uint32_t batch_length(std::uint64_t batch) const;  // B, or less for a ragged last batch

  // The dataset index at `position` of this rank's order for `epoch`.
  std::uint64_t sample(std::uint64_t epoch, std::uint64_t position) const;

  // Fills out[0 .. batch_length(batch)) with the batch's dataset indices.
  void batch_samples(std::uint64_t epoch, std::uint64_t batch, std::span<std::uint64_t> out) const;

  // The position in the epoch's global order (all ranks) of this rank's
  // `position`: what ShardShuffle::Epoch's questions take.
  std::uint64_t global_position(std::uint64_t position) const { return global_index(position); }
  // The locality shuffle, or null when the order is the global permutation or
  // the plan order. For a cache: shard_shuffle()->epoch(e)->next_use(shard,
  // global_position(p)).
  const ShardShuffle* shard_shuffle() const { return locality_.get(); }

 private:
  std::uint64_t global_index(std::uint64_t position) const;
  Permutation epoch_permutation(std::uint64_t epoch) const;

  std::uint64_t n_;
  std::uint32_t batch_size_;
  bool shuffle_;
  std::uint64_t seed_;
  std::uint32_t rank_;
  std::uint32_t world_;
  std::uint64_t per_rank_;  // samples this rank sees per epoch
  std::uint64_t batches_;
  std::shared_ptr<const ShardShuffle> locality_;  // shuffle with shuffle_window > 0
};

}  // namespace sluice
