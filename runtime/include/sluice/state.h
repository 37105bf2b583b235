// sluice/state.h: where a run stands, to checkpoint it and resume it.
//
// Loader::state() returns a LoaderState: the plan's identity (seed, dataset
// size, batch size, shard) and the position of the next batch. A Loader built
// with Options::resume set to it delivers exactly the batches the
// uninterrupted run would have delivered next, whatever its worker count,
// slots or ordering. The state is a few hundred bytes of JSON.
//
// Elastic resume: the per-rank batch index is the global step (sluice/plan.h),
// so a run saved on W ranks can continue on W' ranks with the same global
// batch (batch_size x world_size). LoaderState::merge() turns the states of
// all W ranks into the run's global position (all_ranks = true); a Loader of
// any world size with the same global batch resumes from it. A state saved
// with world_size 1 is all ranks by definition.
//
// Thread safety: plain data.
#pragma once

#include "sluice/export.h"

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace sluice {

struct Options;

struct SLUICE_API LoaderState {
  // The plan it belongs to; a resume with a different plan is refused.
  std::uint64_t seed = 0;
  std::uint64_t dataset_size = 0;
  std::uint32_t batch_size = 0;
  bool shuffle = false;
  std::uint32_t shuffle_window = 0;  // with shuffle: the locality shuffle's window (0: global)
  std::uint64_t shard_layout = 0;    // with shuffle_window: ShardShuffle::hash_layout of the shards
  // Options::order_key at the position's first sample (0: none; never 0 when set).
  std::uint64_t order_key = 0;
  bool drop_last = false;
  std::uint32_t rank = 0;
  std::uint32_t world_size = 1;
  std::string shard_policy = "pad";
  // The position is the whole run's (every rank of it, as merge() returns),
  // not one rank's: it resumes on any world size with the same global batch.
  bool all_ranks = false;

  // The position: batches [0, batch) of `epoch` were delivered, plus (when
  // unordered) the later batches of that epoch listed in delivered_ahead.
  std::uint64_t epoch = 0;
  std::uint64_t batch = 0;
  std::vector<std::uint64_t> delivered_ahead;
  // Samples dropped by on_error = skip so far; the resumed run drops them too.
  std::vector<std::uint64_t> skipped_samples;

  // Where a Loader built from `options` starts: options.resume, or the first
  // batch of its plan. For saving a state before any Loader exists (a run
  // stopped during start-up).
  static LoaderState start_of(const Options& options);

  // The global position of a run from the states its ranks saved (any
  // order): the slowest rank's (epoch, batch), the union of the skipped
  // samples and, for unordered runs, the later steps that every rank
  // delivered; all_ranks is set. Throws Error if the states disagree on the
  // plan or their ranks are not exactly 0 .. world_size-1 once each. `note`,
  // when given, says where the ranks stopped and how many per-rank batches
  // will be delivered again because they stopped at different steps.
  static LoaderState merge(std::span<const LoaderState> ranks, std::string* note = nullptr);

  std::string to_json() const;
  // Throws Error naming the key or position that is wrong.
  static LoaderState from_json(std::string_view json);

  bool operator==(const LoaderState&) const = default;
};

}  // namespace sluice
