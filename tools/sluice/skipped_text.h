// skipped_text.h: the samples on_error = "skip" dropped, as `sluice run` and
// `sluice peek` print them.
//
// Thread safety: pure functions.
#pragma once

#include <string>

#include "sluice/loader.h"

namespace sluice::cli {

// "2 samples (on_error = "skip"): ids 4, 17" (at most 50 ids, then how many
// more), then the first few samples' reasons, one per line; `logged`: the
// rest are in a skip log.
std::string describe_skipped(const Stats& stats, bool logged);

}  // namespace sluice::cli
