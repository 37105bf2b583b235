// sluice/state.h: where a run stands, to checkpoint it and resume it.
//
// Loader::state() returns a LoaderState: the plan's identity (seed, dataset
// size, batch size, shard) and the position of the next batch. A Loader built
// with Options::resume set to it delivers exactly the batches the
// uninterrupted run would have delivered next, whatever its worker count,
// slots or ordering. The state is a few hundred bytes of JSON.
//
// Thread safety: plain data.
#pragma once

#include "sluice/export.h"

#include <cstdint>
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
  bool drop_last = false;
  std::uint32_t rank = 0;
  std::uint32_t world_size = 1;
  std::string shard_policy = "pad";

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

  std::string to_json() const;
  // Throws Error naming the key or position that is wrong.
  static LoaderState from_json(std::string_view json);

  bool operator==(const LoaderState&) const = default;
};

}  // namespace sluice
