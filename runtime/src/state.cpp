// LoaderState: its JSON, the merge of the ranks' states, where a run starts,
// and the checks a resume makes (state_internal.h) before LoaderCore applies it.
#include "sluice/state.h"

#include <algorithm>
#include <limits>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "json.h"
#include "sluice/error.h"
#include "sluice/options.h"
#include "sluice/plan.h"
#include "sluice/shard_shuffle.h"
#include "state_internal.h"

namespace sluice {

namespace {

void append_list(std::string& out, const std::vector<std::uint64_t>& v) {
  out += '[';
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i) out += ',';
    out += std::to_string(v[i]);
  }
  out += ']';
}

std::vector<std::uint64_t> read_list(const detail::JsonValue& v, std::string_view what) {
  std::vector<std::uint64_t> out;
  for (const detail::JsonValue& item : v.as_array(what)) out.push_back(item.as_u64(what));
  return out;
}

// The plan fields every state of one run shares, by name, as text, in the
// order errors name them; batch_size and world_size last (an elastic resume
// compares their product).
std::vector<std::pair<const char*, std::string>> plan_fields(const LoaderState& s) {
  return {{"seed", std::to_string(s.seed)},
          {"dataset_size", std::to_string(s.dataset_size)},
          {"shuffle", s.shuffle ? "true" : "false"},
          {"shuffle_window", std::to_string(s.shuffle_window)},
          {"shard_layout", std::to_string(s.shard_layout)},
          {"drop_last", s.drop_last ? "true" : "false"},
          {"shard_policy", s.shard_policy},
          {"batch_size", std::to_string(s.batch_size)},
          {"world_size", std::to_string(s.world_size)}};
}
constexpr std::size_t kSharedFields = 7;  // plan_fields() before batch_size and world_size

}  // namespace

std::string LoaderState::to_json() const {
  std::string out = "{\"sluice_state\":1";
  auto field = [&](const char* key, const std::string& value) {
    out += ",\"";
    out += key;
    out += "\":";
    out += value;
  };
  field("seed", std::to_string(seed));
  field("dataset_size", std::to_string(dataset_size));
  field("batch_size", std::to_string(batch_size));
  field("shuffle", shuffle ? "true" : "false");
  if (shuffle_window > 0) {
    field("shuffle_window", std::to_string(shuffle_window));
    field("shard_layout", std::to_string(shard_layout));
  }
  if (order_key != 0) field("order_key", std::to_string(order_key));
  field("drop_last", drop_last ? "true" : "false");
  field("rank", std::to_string(rank));
  field("world_size", std::to_string(world_size));
  std::string policy;
  detail::append_json_string(policy, shard_policy);
  field("shard_policy", policy);
  if (all_ranks) field("all_ranks", "true");
  field("epoch", std::to_string(epoch));
  field("batch", std::to_string(batch));
  out += ",\"delivered_ahead\":";
  append_list(out, delivered_ahead);
  out += ",\"skipped_samples\":";
  append_list(out, skipped_samples);
  out += "}";
  return out;
}

LoaderState LoaderState::from_json(std::string_view json) {
  try {
    detail::JsonValue v = detail::parse_json(json);
    if (v.at("sluice_state").as_u64("sluice_state") != 1) throw Error("unknown sluice_state version");
    LoaderState s;
    s.seed = v.at("seed").as_u64("seed");
    s.dataset_size = v.at("dataset_size").as_u64("dataset_size");
    s.batch_size = static_cast<std::uint32_t>(v.at("batch_size").as_u64("batch_size"));
    s.shuffle = v.at("shuffle").as_bool("shuffle");
    if (const detail::JsonValue* w = v.find("shuffle_window")) {
      s.shuffle_window = static_cast<std::uint32_t>(w->as_u64("shuffle_window"));
      s.shard_layout = v.at("shard_layout").as_u64("shard_layout");
    }
    if (const detail::JsonValue* k = v.find("order_key")) s.order_key = k->as_u64("order_key");
    s.drop_last = v.at("drop_last").as_bool("drop_last");
    s.rank = static_cast<std::uint32_t>(v.at("rank").as_u64("rank"));
    s.world_size = static_cast<std::uint32_t>(v.at("world_size").as_u64("world_size"));
    s.shard_policy = v.at("shard_policy").as_string("shard_policy");
    if (const detail::JsonValue* all = v.find("all_ranks")) s.all_ranks = all->as_bool("all_ranks");
    s.epoch = v.at("epoch").as_u64("epoch");
    s.batch = v.at("batch").as_u64("batch");
    s.delivered_ahead = read_list(v.at("delivered_ahead"), "delivered_ahead");
    s.skipped_samples = read_list(v.at("skipped_samples"), "skipped_samples");
    return s;
  } catch (const Error& e) {
    throw OptionsError(std::string("loader state: ") + e.what());
  }
}

// A global position (all ranks) starts every rank of this run at the same
// global step: saved before a Loader exists, it is this rank's own state.
LoaderState LoaderState::start_of(const Options& options) {
  if (!options.resume) return detail::plan_identity(options);
  const LoaderState& r = *options.resume;
  if (!r.all_ranks && r.world_size != 1) return r;
  LoaderState s = detail::plan_identity(options);
  s.epoch = r.epoch;
  s.batch = r.batch;
  s.delivered_ahead = r.delivered_ahead;
  s.skipped_samples = r.skipped_samples;
  s.order_key = detail::order_key_at(options, s);
  return s;
}

LoaderState LoaderState::merge(std::span<const LoaderState> ranks, std::string* note) {
  auto fail = [](const std::string& why) -> void { throw Error("cannot merge the ranks' states: " + why); };
  auto rank_name = [](const LoaderState& s) { return "rank " + std::to_string(s.rank) + "'s state"; };
  if (ranks.empty()) fail("no state given");
  const LoaderState& first = ranks[0];
  if (ranks.size() == 1 && first.all_ranks) {
    if (note) *note = "the state is already the state of all ranks";
    return first;
  }
  const std::uint32_t world = first.world_size;
  if (world == 0) fail(rank_name(first) + " has world_size 0");
  const auto fields = plan_fields(first);
  std::vector<bool> seen(world, false);
  for (const LoaderState& s : ranks) {
    const auto theirs = plan_fields(s);
    for (std::size_t i = 0; i < fields.size(); ++i) {
      if (theirs[i].second != fields[i].second) {
        fail(rank_name(s) + " has " + theirs[i].first + " = " + theirs[i].second + " but " + rank_name(first) +
             " has " + fields[i].second + ": they are not from the same run");
      }
    }
    if (s.all_ranks && ranks.size() > 1) fail(rank_name(s) + " is already the state of all ranks; pass it alone");
    if (s.rank >= world) {
      fail("a state has rank " + std::to_string(s.rank) + ", not below its world_size " + std::to_string(world));
    }
    if (seen[s.rank]) fail(rank_name(s) + " is given twice");
    seen[s.rank] = true;
  }
  for (std::uint32_t r = 0; r < world; ++r) {
    if (!seen[r]) {
      fail("rank " + std::to_string(r) + "'s state is missing (" + std::to_string(ranks.size()) + " of " +
           std::to_string(world) + " ranks given)");
    }
  }

  const std::optional<ShardPolicy> policy = parse_shard_policy(first.shard_policy);
  if (!policy) fail("the states' shard_policy is '" + first.shard_policy + "', neither pad nor drop");

  // The slowest rank's position; the steps past it that every rank delivered.
  auto position = [](const LoaderState& s) { return std::pair(s.epoch, s.batch); };
  const LoaderState& slowest =
      *std::min_element(ranks.begin(), ranks.end(), [&](const auto& a, const auto& b) { return position(a) < position(b); });
  LoaderState merged = first;
  merged.rank = 0;
  merged.all_ranks = true;
  merged.epoch = slowest.epoch;
  merged.batch = slowest.batch;
  merged.order_key = slowest.order_key;  // the key is of the position's first sample
  merged.delivered_ahead.clear();
  auto delivered = [&](const LoaderState& s, std::uint64_t step) {
    return position(s) > std::pair(merged.epoch, step) ||
           (s.epoch == merged.epoch &&
            std::find(s.delivered_ahead.begin(), s.delivered_ahead.end(), step) != s.delivered_ahead.end());
  };
  for (std::uint64_t step : std::set<std::uint64_t>(slowest.delivered_ahead.begin(), slowest.delivered_ahead.end())) {
    if (step > merged.batch &&
        std::all_of(ranks.begin(), ranks.end(), [&](const LoaderState& s) { return delivered(s, step); })) {
      merged.delivered_ahead.push_back(step);
    }
  }
  std::set<std::uint64_t> skipped;
  for (const LoaderState& s : ranks) skipped.insert(s.skipped_samples.begin(), s.skipped_samples.end());
  merged.skipped_samples.assign(skipped.begin(), skipped.end());
  if (!note) return merged;

  // Per-rank batches some rank delivered at or past the merged position, less
  // those every rank delivered (skipped over on resume): delivered again.
  Options plan;
  plan.seed = first.seed;
  plan.dataset_size = first.dataset_size;
  plan.batch_size = first.batch_size;
  plan.shuffle = first.shuffle;
  plan.drop_last = first.drop_last;
  plan.world_size = world;
  plan.shard_policy = *policy;
  const std::uint64_t per_epoch = EpochPlan(plan).batches_per_epoch();
  std::uint64_t again = 0;
  std::string ahead;
  for (const LoaderState& s : ranks) {
    again += (s.epoch - merged.epoch) * per_epoch + s.batch - merged.batch + s.delivered_ahead.size() -
             merged.delivered_ahead.size();
    if (position(s) != position(merged)) {
      ahead += (ahead.empty() ? "" : ", ") + ("rank " + std::to_string(s.rank) + " at epoch " +
                                              std::to_string(s.epoch) + ", batch " + std::to_string(s.batch));
    }
  }
  const std::string at = "epoch " + std::to_string(merged.epoch) + ", batch " + std::to_string(merged.batch);
  if (ahead.empty() && again == 0) {
    *note = "all " + std::to_string(world) + " ranks stopped at " + at + "; no batch is delivered twice";
  } else {
    *note = "the " + std::to_string(world) + " ranks stopped at different steps; the run resumes at " + at +
            " (rank " + std::to_string(slowest.rank) + ", the slowest)" +
            (ahead.empty() ? "" : " while " + ahead) + ": " + std::to_string(again) + " per-rank batch" +
            (again == 1 ? "" : "es") + " already delivered will be delivered again";
  }
  return merged;
}

}  // namespace sluice

namespace sluice::detail {

namespace {

[[noreturn]] void refuse(const std::string& why) { throw OptionsError("cannot resume: " + why); }

}  // namespace

std::uint64_t order_key_at(const Options& o, const LoaderState& s) {
  if (!o.order_key) return 0;
  // Every rank's batches before s.batch: the epoch's positions below batch x global batch.
  const std::uint64_t global_batch = std::uint64_t{s.batch_size} * s.world_size;
  const std::uint64_t in_epoch = std::min(o.dataset_size, s.batch * global_batch);
  const std::uint64_t key = o.order_key(s.epoch * o.dataset_size + in_epoch);
  return key == 0 ? 1 : key;
}

LoaderState plan_identity(const Options& o) {
  LoaderState s;
  s.seed = o.seed;
  s.dataset_size = o.dataset_size;
  s.batch_size = o.batch_size;
  s.shuffle = o.shuffle;
  if (o.shuffle && o.shuffle_window > 0) {
    s.shuffle_window = o.shuffle_window;
    s.shard_layout = ShardShuffle::hash_layout(o.shard_sizes);
  }
  s.drop_last = o.drop_last;
  s.rank = o.rank;
  s.world_size = o.world_size;
  s.shard_policy = name_of(o.shard_policy);
  return s;
}

// A state of all ranks (LoaderState::merge, or a run of world size 1) holds the
// run's global step, which is the per-rank batch index on any world size whose
// global batch (batch_size x world_size) is the same: it resumes there. One
// rank's state of a multi-rank run holds only that rank's position: it resumes
// that rank of the same world size.
ResumePoint resume_point(const LoaderState& s, const Options& o, std::uint64_t per_epoch) {
  auto mismatch = [](const std::string& what, const std::string& state, const std::string& now) {
    refuse("the state was saved with " + what + " = " + state + " but options." + what + " is " + now);
  };
  const auto saved = plan_fields(s), now = plan_fields(plan_identity(o));
  for (std::size_t i = 0; i < kSharedFields; ++i) {
    if (saved[i].second != now[i].second) mismatch(saved[i].first, saved[i].second, now[i].second);
  }
  const bool global = s.all_ranks || s.world_size == 1;
  if (!global && s.world_size != o.world_size) {
    refuse("the state is rank " + std::to_string(s.rank) + "'s of a run of world_size " +
           std::to_string(s.world_size) + ", but options.world_size is " + std::to_string(o.world_size) +
           ": one rank's state resumes only that rank; to resume on another world size, pass the states of all "
           "ranks (LoaderState::merge)");
  }
  if (s.world_size == o.world_size || !global) {
    if (s.batch_size != o.batch_size) {
      mismatch("batch_size", std::to_string(s.batch_size), std::to_string(o.batch_size));
    }
  } else if (std::uint64_t{s.batch_size} * s.world_size != std::uint64_t{o.batch_size} * o.world_size) {
    const std::uint64_t g = std::uint64_t{s.batch_size} * s.world_size;
    refuse("the state was saved with a global batch of " + std::to_string(g) + " (batch_size " +
           std::to_string(s.batch_size) + " x world_size " + std::to_string(s.world_size) + ") but this run's is " +
           std::to_string(std::uint64_t{o.batch_size} * o.world_size) + " (batch_size " +
           std::to_string(o.batch_size) + " x world_size " + std::to_string(o.world_size) +
           "): on another world size the global batch must stay the same (batch_size = " +
           std::to_string(g) + " / world_size)");
  }
  if (!global) {
    if (s.rank != o.rank) mismatch("rank", std::to_string(s.rank), std::to_string(o.rank));
  }

  if (s.order_key != 0 || o.order_key) {
    const std::uint64_t now = order_key_at(o, s);
    if (now == 0)
      refuse("the state was saved from a source that orders its samples itself (a mixture), and this one does not");
    if (s.order_key != 0 && now != s.order_key)
      refuse("the samples before the state's position (epoch " + std::to_string(s.epoch) + ", batch " +
             std::to_string(s.batch) + ") would come in another order: the source changed (a mixture's sources, "
             "their shuffle, or its weights; to change weights from here, add a phase from the row the run "
             "resumes at, global step x global batch)");
  }
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
  ResumePoint point;
  point.start = s.epoch * per_epoch + s.batch;  // no overflow: s.epoch <= last_epoch
  std::vector<std::uint64_t> ahead = s.delivered_ahead;
  std::sort(ahead.begin(), ahead.end());
  for (std::size_t i = 0; i < ahead.size(); ++i) {
    const std::uint64_t b = ahead[i];
    if (b <= s.batch || b >= per_epoch) {
      refuse("delivered_ahead holds batch " + std::to_string(b) + ", outside (" + std::to_string(s.batch) + ", " +
             std::to_string(per_epoch) + ")");
    }
    if (i > 0 && ahead[i - 1] == b) refuse("delivered_ahead holds batch " + std::to_string(b) + " twice");
    point.ahead.push_back(s.epoch * per_epoch + b);
  }
  for (std::uint64_t id : s.skipped_samples) {
    if (id >= o.dataset_size) {
      refuse("skipped_samples holds sample " + std::to_string(id) + ", past the dataset's " +
             std::to_string(o.dataset_size) + " samples");
    }
  }
  return point;
}

}  // namespace sluice::detail
