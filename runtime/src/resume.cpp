// LoaderCore's checkpoints: a resume applied to the scheduler, and the
// LoaderState a run stands at. The state itself, and every check a resume
// makes, is state.cpp's (state_internal.h).
#include <algorithm>
#include <string>
#include <vector>

#include "loader_core.h"
#include "sluice/error.h"
#include "state_internal.h"

namespace sluice::detail {

void LoaderCore::resume_from(const LoaderState& s) {
  const ResumePoint point = resume_point(s, options_, plan_.batches_per_epoch());
  resumed_ahead_ = point.ahead;
  next_issue_ = next_deliver_ = point.start;
  delivered_ = point.start + resumed_ahead_.size();
  delivered_seqs_ = resumed_ahead_;
  // Batches skipped over also sit between next_deliver_ and next_issue_.
  slots_.set_ready_window(layout_.slots + resumed_ahead_.size());
  skip_samples(s.skipped_samples, "skipped by the run this one resumes");
}

LoaderState LoaderCore::state(std::optional<std::uint64_t> undelivered) const {
  LoaderState s = plan_identity(options_);
  const std::uint64_t per_epoch = plan_.batches_per_epoch();
  std::uint64_t next = next_deliver_;
  std::vector<std::uint64_t> ahead = delivered_seqs_;
  if (undelivered && *undelivered >= next) {
    std::erase(ahead, *undelivered);
  } else if (undelivered) {
    // The position goes back to it; what was delivered after it is ahead.
    // Those lie in its epoch: an epoch's batches are all delivered before the
    // next epoch's first, and the host takes this one again before any other.
    for (std::uint64_t seq = *undelivered + 1; seq < next; ++seq) ahead.push_back(seq);
    std::sort(ahead.begin(), ahead.end());
    next = *undelivered;
  }
  s.epoch = next / per_epoch;
  s.batch = next % per_epoch;
  if (undelivered && !ahead.empty() && ahead.back() / per_epoch != s.epoch) {
    throw Error("state_without: batches of epoch " + std::to_string(ahead.back() / per_epoch) +
                " were delivered after the held batch of epoch " + std::to_string(s.epoch) +
                "; a state can say so only within one epoch (take the held batch before any other)");
  }
  for (std::uint64_t seq : ahead) s.delivered_ahead.push_back(seq - s.epoch * per_epoch);
  s.skipped_samples = stats_.skipped_samples;
  s.order_key = order_key_at(options_, s);
  return s;
}

}  // namespace sluice::detail
