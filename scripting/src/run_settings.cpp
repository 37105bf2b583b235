#include "sluice/run_settings.h"

#include <algorithm>
#include <charconv>

#include "sluice/error.h"
#include "sluice/launcher.h"
#include "sluice/script.h"

namespace sluice {

namespace {

constexpr std::uint64_t kU32 = 0xFFFFFFFFull;

// "--batch-timeout-ms", "batch-timeout-ms" and "batch_timeout_ms" are one name.
std::string normal(std::string_view name) {
  while (name.starts_with("-")) name.remove_prefix(1);
  std::string n(name);
  std::replace(n.begin(), n.end(), '-', '_');
  return n;
}

[[noreturn]] void bad(const std::string& name, const std::string& expects, std::string_view value) {
  throw Error(name + " expects " + expects + ", got '" + std::string(value) + "'");
}

std::uint64_t count(const std::string& name, std::string_view text, std::uint64_t min, std::uint64_t max) {
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < min || value > max) {
    bad(name, "an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]", text);
  }
  return value;
}

std::uint32_t count32(const std::string& name, std::string_view text, std::uint64_t min = 0) {
  return static_cast<std::uint32_t>(count(name, text, min, kU32));
}

bool flag(const std::string& name, std::string_view text) {
  if (text == "true" || text == "1") return true;
  if (text == "false" || text == "0") return false;
  bad(name, "true or false", text);
}

const char* const kNames[] = {"epochs",      "workers",          "prefetch",         "seed",
                              "on_error",    "batch_size",       "drop_last",        "shuffle",
                              "ordered",     "rank",             "world_size",       "max_retries",
                              "batch_timeout_ms", "worker_memory_mb", "held_timeout_ms", "skip_fill",
                              "device",      "shard_policy",     "global_batch_size", "memory_budget_mb"};
// The settings that are true or false, which a command line may give as
// --name and --no-name.
const char* const kFlags[] = {"drop_last", "shuffle", "ordered"};

}  // namespace

bool RunSettings::known(std::string_view name) {
  const std::string n = normal(name);
  return std::find(std::begin(kNames), std::end(kNames), n) != std::end(kNames);
}

bool RunSettings::is_flag(std::string_view name) {
  const std::string n = normal(name);
  return std::find(std::begin(kFlags), std::end(kFlags), n) != std::end(kFlags);
}

std::vector<std::string> RunSettings::names() { return {std::begin(kNames), std::end(kNames)}; }

void RunSettings::set(std::string_view name_value) {
  const auto eq = name_value.find('=');
  if (eq == std::string_view::npos) {
    throw Error("setting '" + std::string(name_value) + "' is not of the form name=value");
  }
  set(name_value.substr(0, eq), name_value.substr(eq + 1));
}

void RunSettings::set(std::string_view raw_name, std::string_view v) {
  const std::string n = normal(raw_name);
  const std::string shown(raw_name);  // errors use the name as the caller spelled it
  if (n == "epochs") {
    script_.epochs = count32(shown, v);
  } else if (n == "workers") {
    script_.workers = v == "auto" ? kAutoWorkers : static_cast<std::uint32_t>(count(shown, v, 1, kMaxWorkers));
  } else if (n == "prefetch") {
    script_.prefetch = v == "auto" ? 0 : count32(shown, v);
  } else if (n == "memory_budget_mb") {
    memory_budget_mb_ = count(shown, v, 1, UINT64_MAX >> 20);
  } else if (n == "seed") {
    script_.seed = count(shown, v, 0, (std::uint64_t{1} << 53) - 1);
  } else if (n == "on_error") {
    const auto on_error = parse_on_error(v);
    if (!on_error) bad(shown, "fail or skip", v);
    script_.on_error = *on_error;
  } else if (n == "batch_size") {
    batch_size_ = count32(shown, v, 1);
  } else if (n == "drop_last") {
    drop_last_ = flag(shown, v);
  } else if (n == "shuffle") {
    shuffle_ = flag(shown, v);
  } else if (n == "ordered") {
    ordered_ = flag(shown, v);
  } else if (n == "rank") {
    rank_ = count32(shown, v);
  } else if (n == "world_size") {
    world_size_ = count32(shown, v, 1);
  } else if (n == "max_retries") {
    max_retries_ = count32(shown, v, 1);
  } else if (n == "batch_timeout_ms") {
    batch_timeout_ms_ = count32(shown, v);
  } else if (n == "worker_memory_mb") {
    worker_memory_mb_ = count(shown, v, 0, UINT64_MAX >> 20);
  } else if (n == "held_timeout_ms") {
    held_timeout_ms_ = count32(shown, v);
  } else if (n == "skip_fill") {
    const auto skip_fill = parse_skip_fill(v);
    if (!skip_fill) bad(shown, "shrink or repeat", v);
    skip_fill_ = skip_fill;
  } else if (n == "shard_policy") {
    const auto shard_policy = parse_shard_policy(v);
    if (!shard_policy) bad(shown, "pad or drop", v);
    shard_policy_ = shard_policy;
  } else if (n == "global_batch_size") {
    global_batch_size_ = count32(shown, v, 1);
  } else if (n == "device") {
    if (v != "cpu" && v != "auto") bad(shown, "cpu or auto (this build delivers batches in host memory)", v);
  } else {
    std::string names;
    for (const char* known : kNames) names += std::string(names.empty() ? "" : ", ") + known;
    throw Error("unknown setting '" + std::string(raw_name) + "'; the settings are " + names);
  }
}

void RunSettings::apply(Options& o) const {
  if (batch_size_) o.batch_size = *batch_size_;
  if (drop_last_) o.drop_last = *drop_last_;
  if (shuffle_) o.shuffle = *shuffle_;
  if (ordered_) o.ordered = *ordered_;
  if (rank_) o.rank = *rank_;
  if (world_size_) o.world_size = *world_size_;
  if (max_retries_) o.max_retries = *max_retries_;
  if (batch_timeout_ms_) o.batch_timeout_ms = *batch_timeout_ms_;
  if (worker_memory_mb_) o.worker_memory_mb = *worker_memory_mb_;
  if (memory_budget_mb_) o.memory_budget_mb = *memory_budget_mb_;
  if (held_timeout_ms_) o.held_timeout_ms = *held_timeout_ms_;
  if (skip_fill_) o.skip_fill = *skip_fill_;
  if (shard_policy_) o.shard_policy = *shard_policy_;
  if (global_batch_size_) {
    // After the world size is known (launcher or setting): the same global
    // batch on any number of ranks is what resumes on another world size.
    const std::uint32_t g = *global_batch_size_;
    if (g % o.world_size != 0) {
      throw Error("global_batch_size " + std::to_string(g) + " is not divisible by the world size " +
                  std::to_string(o.world_size) + ": every rank takes global_batch_size / world_size samples per step");
    }
    if (batch_size_ && *batch_size_ != g / o.world_size) {
      throw Error("batch_size " + std::to_string(*batch_size_) + " and global_batch_size " + std::to_string(g) +
                  " disagree on " + std::to_string(o.world_size) + " ranks (" + std::to_string(g) + " / " +
                  std::to_string(o.world_size) + " = " + std::to_string(g / o.world_size) + "): give one of them");
    }
    o.batch_size = g / o.world_size;
  }
}

void RunSettings::apply_all(Options& o) const {
  if (script_.epochs) o.epochs = *script_.epochs;
  if (script_.workers) o.workers = *script_.workers;
  if (script_.prefetch) o.slots = *script_.prefetch;
  if (script_.seed) o.seed = *script_.seed;
  if (script_.on_error) o.on_error = *script_.on_error;
  apply_launch(o, detect_launch());
  apply(o);
  resolve_auto_workers(o);  // no script to do it
}

Script RunSettings::load(std::string* launcher) const {
  Script script = load_script(script_);
  const Launch launch = detect_launch();
  apply_launch(script.options, launch);
  apply(script.options);
  script.notes.insert(script.notes.end(), launch.warnings.begin(), launch.warnings.end());
  if (launcher) *launcher = launch.launcher;
  return script;
}

}  // namespace sluice
