#include "sluice/settings.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <type_traits>

#include "setting_rows.h"
#include "sluice/error.h"

namespace sluice {

namespace detail {

namespace {

constexpr std::uint64_t kU32 = 0xFFFFFFFFull;
constexpr std::uint64_t kMiB = UINT64_MAX >> 20;  // MiB counts whose bytes fit 64 bits
constexpr std::uint64_t kSeeds = (std::uint64_t{1} << 53) - 1;  // seeds are Lua numbers

[[noreturn]] void bad(const std::string& name, const std::string& expects, std::string_view value) {
  throw OptionsError(name + " expects " + expects + ", got '" + std::string(value) + "'");
}

// "[0, 2^32)" for the large ranges, "[1, 256]" for the others.
std::string range_text(std::uint64_t min, std::uint64_t max) {
  if (max >= 0xFFFF && max != UINT64_MAX && std::has_single_bit(max + 1)) {
    return "[" + std::to_string(min) + ", 2^" + std::to_string(std::countr_zero(max + 1)) + ")";
  }
  return "[" + std::to_string(min) + ", " + std::to_string(max) + "]";
}

std::string either(const std::vector<std::string>& choices) {
  std::string text;
  for (std::size_t i = 0; i < choices.size(); ++i) {
    text += (i == 0 ? "" : i + 1 == choices.size() ? " or " : ", ") + choices[i];
  }
  return text;
}

SettingRow count(std::string name, std::uint64_t min, std::uint64_t max, std::string default_value,
                 std::string help) {
  SettingRow row;
  row.about = {std::move(name), SettingKind::count, "", std::move(default_value), std::move(help), false};
  row.min = min;
  row.max = max;
  return row;
}

SettingRow flag(std::string name, std::string default_value, std::string help) {
  SettingRow row;
  row.about = {std::move(name), SettingKind::flag, "true or false", std::move(default_value), std::move(help), false};
  row.max = 1;
  return row;
}

SettingRow path(std::string name, std::string help) {
  SettingRow row;
  row.about = {std::move(name), SettingKind::path, "a directory path", "", std::move(help), false};
  return row;
}

SettingRow choice(std::string name, std::vector<std::string> choices, std::string default_value, std::string help) {
  SettingRow row;
  row.about = {std::move(name), SettingKind::choice, either(choices), std::move(default_value), std::move(help),
               false};
  row.choices = std::move(choices);
  return row;
}

// A choice's value is its index, cast to the enum: the choices are listed in the enum's order.
static_assert(static_cast<int>(OnError::fail) == 0 && static_cast<int>(OnError::skip) == 1);
static_assert(static_cast<int>(SkipFill::shrink) == 0 && static_cast<int>(SkipFill::repeat) == 1);
static_assert(static_cast<int>(ShardPolicy::pad) == 0 && static_cast<int>(ShardPolicy::drop) == 1);

// A setting held in Options::*Field, as the row's value cast to the field's type.
template <auto Field>
SettingRow to(SettingRow row) {
  row.apply = [](Options& o, std::uint64_t v) { o.*Field = static_cast<std::remove_cvref_t<decltype(o.*Field)>>(v); };
  row.get = [](const Options& o) { return static_cast<std::uint64_t>(o.*Field); };
  return row;
}

// A setting that shapes the load: ScriptOptions::*Field too.
template <auto Field>
SettingRow loads(SettingRow row) {
  row.load = [](ScriptOptions& s, std::uint64_t v) {
    s.*Field = static_cast<typename std::remove_cvref_t<decltype(s.*Field)>::value_type>(v);
  };
  return row;
}

SettingRow in_pipeline(SettingRow row) {
  row.about.pipeline = true;
  return row;
}

// The table. A setting that shapes the load sets ScriptOptions (and, with no
// script, Options too); the others set Options after the load. Defaults are
// what Options{} and sluice.lua hold (tests/scripting/settings_test.cpp checks both).
std::vector<SettingRow> make_rows() {
  std::vector<SettingRow> rows;

  SettingRow r = in_pipeline(count("epochs", 0, kU32, "1", "epochs to run; 0 = until stopped"));
  rows.push_back(loads<&ScriptOptions::epochs>(to<&Options::epochs>(r)));

  r = in_pipeline(count("workers", 1, kMaxWorkers, "2",
                        "worker processes; auto: start with the usable cores and add workers while throughput rises "
                        "and the CPUs are not saturated"));
  r.auto_value = kAutoWorkers;
  rows.push_back(loads<&ScriptOptions::workers>(to<&Options::workers>(r)));

  r = in_pipeline(count("prefetch", 0, kU32, "auto",
                        "batch slots in flight, prefetched or held (Options::slots); 0 or auto = 2 * workers + 2 "
                        "(with auto workers, 2 per worker it may grow to)"));
  r.auto_value = 0;
  rows.push_back(loads<&ScriptOptions::prefetch>(to<&Options::slots>(r)));

  r = in_pipeline(count("seed", 0, kSeeds, "0", "seed of the shuffle and of ctx.rng"));
  rows.push_back(loads<&ScriptOptions::seed>(to<&Options::seed>(r)));

  r = in_pipeline(choice("on_error", {name_of(OnError::fail), name_of(OnError::skip)}, "fail",
                         "a sample whose map fails, or that crashes or hangs its worker max_retries times: stop "
                         "the run (fail), or drop it from its batch and report it (skip)"));
  rows.push_back(loads<&ScriptOptions::on_error>(to<&Options::on_error>(r)));

  r = in_pipeline(count("batch_size", 1, kU32, "1", "samples per batch (per rank)"));
  rows.push_back(to<&Options::batch_size>(r));

  r = in_pipeline(flag("drop_last", "false", "drop a short last batch instead of delivering it"));
  rows.push_back(to<&Options::drop_last>(r));

  r = in_pipeline(
      flag("shuffle", "false", "a fresh sample order every epoch (from seed and epoch) instead of plan order"));
  rows.push_back(loads<&ScriptOptions::shuffle>(to<&Options::shuffle>(r)));

  r = in_pipeline(count("shuffle_window", 0, kU32, "0",
                        "with shuffle: 0 shuffles globally; k > 0 keeps shard locality: the source's shards are "
                        "shuffled per epoch and samples only within windows of k shards (a cache of k to 2k shards "
                        "then loads each shard once per epoch)"));
  rows.push_back(loads<&ScriptOptions::shuffle_window>(to<&Options::shuffle_window>(r)));

  r = in_pipeline(flag("ordered", "true", "deliver in plan order; false: as batches complete (epoch by epoch)"));
  rows.push_back(to<&Options::ordered>(r));

  r = count("rank", 0, kU32, "0",
            "this process's shard of every epoch; by default from torchrun, Open MPI, PMI or SLURM variables");
  rows.push_back(to<&Options::rank>(r));

  r = count("world_size", 1, kU32, "1", "ranks that share every epoch; by default from the launcher's variables");
  rows.push_back(to<&Options::world_size>(r));

  r = count("max_retries", 1, kU32, "3",
            "crashes, timeouts or memory kills of one sample in a row before on_error applies");
  rows.push_back(to<&Options::max_retries>(r));

  r = count("batch_timeout_ms", 0, kU32, "600000",
            "a worker that fills one batch longer (or shows no sign of life that long) is killed and its batches "
            "retried; also the load's trial of sample 0, made in a child process; 0 = never");
  rows.push_back(loads<&ScriptOptions::batch_timeout_ms>(to<&Options::batch_timeout_ms>(r)));  // the trial's too

  r = count("worker_memory_mb", 0, kMiB, "0",
            "a worker whose private memory (RSS less shared pages) passes this many MiB is killed and replaced; "
            "0 = no limit");
  rows.push_back(to<&Options::worker_memory_mb>(r));

  r = count("held_timeout_ms", 0, kU32, "5000",
            "when the consumer holds every slot, how long next() waits for one to be released before an error");
  rows.push_back(to<&Options::held_timeout_ms>(r));

  r = in_pipeline(choice("skip_fill", {name_of(SkipFill::shrink), name_of(SkipFill::repeat)}, "shrink",
                         "a batch that lost samples to on_error skip is shorter (shrink), or keeps its size by "
                         "repeating its surviving samples in order (repeat: fixed shapes for compiled models)"));
  rows.push_back(to<&Options::skip_fill>(r));

  r = in_pipeline(choice("device", {"cpu", "auto"}, "cpu",
                         "where batches are delivered: this build delivers them in host memory"));
  r.expects = "cpu or auto (this build delivers batches in host memory)";
  rows.push_back(r);

  r = choice("shard_policy", {name_of(ShardPolicy::pad), name_of(ShardPolicy::drop)}, "pad",
             "ranks of an uneven dataset: repeat a few samples so that every rank gets ceil(N / world) (pad), or "
             "skip the last N % world (drop)");
  rows.push_back(to<&Options::shard_policy>(r));

  // Applied by RunSettings::apply once the world size is known.
  rows.push_back(count("global_batch_size", 1, kU32, "",
                       "samples per global step: each rank takes it / world_size (it must divide), so runs with "
                       "the same one deliver the same global batches, and resume, on any number of ranks"));

  r = in_pipeline(count("memory_budget_mb", 1, kMiB, "1024",
                        "with auto workers: the arena's slots stay within this many MiB"));
  rows.push_back(to<&Options::memory_budget_mb>(r));

  // Remote sources: shape the load and the workers' fetching.
  r = path("cache_dir",
           "remote shards (s3://, https://): the node cache's directory, shared by every rank and job that names "
           "it; unset: SLUICE_CACHE_DIR, else $XDG_CACHE_HOME/sluice");
  r.load_path = [](ScriptOptions& s, std::string_view v) { s.cache_dir = std::string(v); };
  rows.push_back(r);
  rows.push_back(loads<&ScriptOptions::cache_limit_mb>(
      count("cache_limit_mb", 0, kMiB, "0",
            "remote shards (s3://, https://): the node cache's budget in MiB, shared by every rank and job on the "
            "node (the directory: cache_dir); 0 = no limit")));
  rows.push_back(loads<&ScriptOptions::remote_retries>(
      count("remote_retries", 0, 100, "6",
            "a remote request that fails with 5xx or 429, a reset, a cut body or a stall is retried this many times, "
            "with exponential backoff, before the run stops (0.1 s doubling up to 10 s, with jitter: 6 retries wait "
            "about 5 s in all, 10 about 30 s)")));
  rows.push_back(loads<&ScriptOptions::remote_timeout_ms>(
      count("remote_timeout_ms", 1, kU32, "30000",
            "a remote transfer that receives nothing for this long is dropped and retried")));
  rows.push_back(loads<&ScriptOptions::remote_prefetch_mb>(
      count("remote_prefetch_mb", 0, kMiB, "256",
            "remote shards fetched lazily (indexed TFRecord, tar): each worker downloads the shards of the plan's next "
            "batches up to this many MiB ahead of its reads, and at most half of cache_limit_mb (which the node's "
            "workers and ranks share); 0 = only what a batch needs now")));

  for (SettingRow& row : rows) {
    if (row.about.kind == SettingKind::count) {
      row.about.takes = "an integer in " + range_text(row.min, row.max) + (row.auto_value ? " or auto" : "");
    }
  }
  return rows;
}

}  // namespace

const std::vector<SettingRow>& setting_rows() {
  static const std::vector<SettingRow> rows = make_rows();
  return rows;
}

std::string normal_name(std::string_view name) {
  while (name.starts_with("-")) name.remove_prefix(1);
  std::string n(name);
  std::replace(n.begin(), n.end(), '-', '_');
  return n;
}

std::size_t setting_index(std::string_view name) {
  const std::string n = normal_name(name);
  const std::vector<SettingRow>& rows = setting_rows();
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].about.name == n) return i;
  }
  return npos;
}

std::uint64_t parse_setting(const SettingRow& row, const std::string& shown, std::string_view text) {
  switch (row.about.kind) {
    case SettingKind::count: {
      if (row.auto_value && text == "auto") return *row.auto_value;
      std::uint64_t value = 0;
      const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
      if (ec != std::errc() || end != text.data() + text.size() || value < row.min || value > row.max) {
        bad(shown,
            "an integer in [" + std::to_string(row.min) + ", " + std::to_string(row.max) + "]" +
                (row.auto_value ? " or \"auto\"" : ""),
            text);
      }
      return value;
    }
    case SettingKind::flag:
      if (text == "true" || text == "1") return 1;
      if (text == "false" || text == "0") return 0;
      bad(shown, "true or false", text);
    case SettingKind::choice:
      for (std::size_t i = 0; i < row.choices.size(); ++i) {
        if (text == row.choices[i]) return i;
      }
      bad(shown, row.expects.empty() ? row.about.takes : row.expects, text);
    case SettingKind::path:
      if (text.empty() || text.find('\0') != std::string_view::npos) bad(shown, row.about.takes, text);
      return 0;
  }
  bad(shown, row.about.takes, text);
}

std::string setting_text(const SettingRow& row, std::uint64_t value) {
  switch (row.about.kind) {
    case SettingKind::count:
      return row.auto_value && value == *row.auto_value ? "auto" : std::to_string(value);
    case SettingKind::flag:
      return value ? "true" : "false";
    case SettingKind::choice:
      return value < row.choices.size() ? row.choices[value] : std::to_string(value);
    case SettingKind::path:
      return "";  // the text is not kept in the value
  }
  return std::to_string(value);
}

}  // namespace detail

const std::vector<Setting>& settings() {
  static const std::vector<Setting> all = [] {
    std::vector<Setting> out;
    for (const detail::SettingRow& row : detail::setting_rows()) out.push_back(row.about);
    return out;
  }();
  return all;
}

const Setting* find_setting(std::string_view name) {
  const std::size_t i = detail::setting_index(name);
  return i == detail::npos ? nullptr : &settings()[i];
}

}  // namespace sluice
