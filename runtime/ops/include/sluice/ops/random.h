// sluice/ops/random.h: where ops that make random choices get their numbers.
//
// Ops never own a generator: the caller passes one, so that augmentation stays
// a pure function of the caller's stream (in pipelines, ctx.rng, keyed by
// seed, epoch and sample). Any source of uniform doubles in [0, 1) fits.
//
// Thread safety: as safe as the state behind it; ops use it for the duration
// of one call.
#pragma once

#include "sluice/export.h"

namespace sluice::ops {

struct SLUICE_API UniformSource {
  double (*next)(void* state);  // uniform in [0, 1)
  void* state;

  double operator()() const { return next(state); }
};

}  // namespace sluice::ops
