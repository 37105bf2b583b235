// state_internal.h: what LoaderCore needs of a LoaderState beyond the public
// header. Everything about a LoaderState (its JSON, merge, start_of, and the
// checks a resume makes) lives in state.cpp; the core only applies the result.
//
// Thread safety: plain functions of their arguments.
#pragma once

#include <cstdint>
#include <vector>

#include "sluice/options.h"
#include "sluice/state.h"

namespace sluice::detail {

// The state of a run of `options` at its first batch: the plan's identity.
LoaderState plan_identity(const Options& options);

// options.order_key at the first sample of state's position (0 without one).
std::uint64_t order_key_at(const Options& options, const LoaderState& state);

// Where a run resumes: the first sequence number to issue, and the later ones
// delivered before the checkpoint (unordered runs), in increasing order.
struct ResumePoint {
  std::uint64_t start = 0;
  std::vector<std::uint64_t> ahead;
};

// Checks every field of `state` against `options` (a state file may be
// hand-edited, truncated or from another run) and returns where the run
// resumes; `per_epoch` is the plan's batches per epoch. Throws Error
// ("cannot resume: ...") naming the first field that does not fit.
ResumePoint resume_point(const LoaderState& state, const Options& options, std::uint64_t per_epoch);

}  // namespace sluice::detail
