// Checkpoints: the LoaderState a run stands at, and a resume from one.
#include <algorithm>
#include <limits>
#include <string>

#include "loader_core.h"
#include "sluice/error.h"

namespace sluice::detail {

namespace {

const char* policy_name(ShardPolicy p) { return p == ShardPolicy::pad ? "pad" : "drop"; }

[[noreturn]] void refuse(const std::string& why) { throw Error("cannot resume: " + why); }

// The plan a state belongs to, at its first batch.
LoaderState plan_identity(const Options& o) {
  LoaderState s;
  s.seed = o.seed;
  s.dataset_size = o.dataset_size;
  s.batch_size = o.batch_size;
  s.shuffle = o.shuffle;
  s.drop_last = o.drop_last;
  s.rank = o.rank;
  s.world_size = o.world_size;
  s.shard_policy = policy_name(o.shard_policy);
  return s;
}

}  // namespace

// Every field of the state is checked before it is used: a state file may be
// hand-edited, truncated or from another run.
void LoaderCore::resume_from(const LoaderState& s) {
  auto mismatch = [](const std::string& what, const std::string& state, const std::string& now) {
    refuse("the state was saved with " + what + " = " + state + " but options." + what + " is " + now);
  };
  const Options& o = options_;
  if (s.seed != o.seed) mismatch("seed", std::to_string(s.seed), std::to_string(o.seed));
  if (s.dataset_size != o.dataset_size) {
    mismatch("dataset_size", std::to_string(s.dataset_size), std::to_string(o.dataset_size));
  }
  if (s.batch_size != o.batch_size) mismatch("batch_size", std::to_string(s.batch_size), std::to_string(o.batch_size));
  if (s.shuffle != o.shuffle) mismatch("shuffle", s.shuffle ? "true" : "false", o.shuffle ? "true" : "false");
  if (s.drop_last != o.drop_last) mismatch("drop_last", s.drop_last ? "true" : "false", o.drop_last ? "true" : "false");
  if (s.rank != o.rank) mismatch("rank", std::to_string(s.rank), std::to_string(o.rank));
  if (s.world_size != o.world_size) mismatch("world_size", std::to_string(s.world_size), std::to_string(o.world_size));
  if (s.shard_policy != policy_name(o.shard_policy)) mismatch("shard_policy", s.shard_policy, policy_name(o.shard_policy));

  const std::uint64_t per_epoch = plan_.batches_per_epoch();
  if (s.batch > per_epoch) {
    refuse("the state's batch " + std::to_string(s.batch) + " is past the epoch's " + std::to_string(per_epoch) +
           " batches");
  }
  const std::uint64_t last_epoch = o.epochs == 0 ? std::numeric_limits<std::uint64_t>::max() / per_epoch - 1
                                                 : o.epochs;
  if (s.epoch > last_epoch || (s.epoch == last_epoch && s.batch > 0)) {
    refuse("the state's position (epoch " + std::to_string(s.epoch) + ", batch " + std::to_string(s.batch) +
           ") is past the end of a run of " + std::to_string(o.epochs) + " epochs");
  }
  const std::uint64_t start = s.epoch * per_epoch + s.batch;  // no overflow: s.epoch <= last_epoch
  std::vector<std::uint64_t> ahead = s.delivered_ahead;
  std::sort(ahead.begin(), ahead.end());
  for (std::size_t i = 0; i < ahead.size(); ++i) {
    const std::uint64_t b = ahead[i];
    if (b <= s.batch || b >= per_epoch) {
      refuse("delivered_ahead holds batch " + std::to_string(b) + ", outside (" + std::to_string(s.batch) + ", " +
             std::to_string(per_epoch) + ")");
    }
    if (i > 0 && ahead[i - 1] == b) refuse("delivered_ahead holds batch " + std::to_string(b) + " twice");
    resumed_ahead_.push_back(s.epoch * per_epoch + b);
  }
  for (std::uint64_t id : s.skipped_samples) {
    if (id >= o.dataset_size) {
      refuse("skipped_samples holds sample " + std::to_string(id) + ", past the dataset's " +
             std::to_string(o.dataset_size) + " samples");
    }
  }
  next_issue_ = next_deliver_ = start;
  delivered_ = start + resumed_ahead_.size();
  delivered_seqs_ = resumed_ahead_;
  // Batches skipped over also sit between next_deliver_ and next_issue_.
  ready_by_seq_.assign(layout_.slots + resumed_ahead_.size(), kNoSlot);
  skip_samples(s.skipped_samples, "skipped by the run this one resumes");
}

LoaderState LoaderCore::state() const {
  LoaderState s = plan_identity(options_);
  const std::uint64_t per_epoch = plan_.batches_per_epoch();
  s.epoch = next_deliver_ / per_epoch;
  s.batch = next_deliver_ % per_epoch;
  for (std::uint64_t seq : delivered_seqs_) s.delivered_ahead.push_back(seq - s.epoch * per_epoch);
  s.skipped_samples = stats_.skipped_samples;
  return s;
}

}  // namespace sluice::detail

namespace sluice {

LoaderState LoaderState::start_of(const Options& options) {
  return options.resume ? *options.resume : detail::plan_identity(options);
}

}  // namespace sluice
