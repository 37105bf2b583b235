// sluice/run_settings.h: the settings of a run by name, the same names for
// `sluice run --name value`, the C API's "name=value" strings and Python's
// keyword arguments.
//
//   sluice::RunSettings settings("train.lua");
//   settings.set("workers", "8");                  // throws Error on an unknown name or a bad value
//   sluice::Script script = settings.load();      // pipeline.lua, the launcher's rank, then the settings
//   sluice::Loader loader(script.options);
//
// Names ('-' and '_' are the same): epochs, workers, prefetch, seed, on_error
// (these also shape the load: see ScriptOptions), batch_size, drop_last,
// shuffle, ordered, rank, world_size, max_retries, batch_timeout_ms,
// worker_memory_mb, held_timeout_ms, skip_fill, shard_policy (pad or drop),
// memory_budget_mb (the arena's slots with auto workers), device (cpu or auto:
// this build delivers batches in host memory), and global_batch_size
// (batch_size becomes global_batch_size / world_size once the world size is
// known; an error when it does not divide). workers and prefetch also take
// "auto" (see ScriptOptions::workers).
// drop_last, shuffle and ordered take true/false (or 1/0).
//
// Thread safety: plain data.
#pragma once

#include "sluice/export.h"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/options.h"
#include "sluice/script.h"

namespace sluice {

class SLUICE_API RunSettings {
 public:
  RunSettings() = default;
  explicit RunSettings(std::string path) { script_.path = std::move(path); }
  void set_path(std::string path) { script_.path = std::move(path); }

  // Sets one setting from text; throws Error naming it and what it expects.
  void set(std::string_view name, std::string_view value);
  // "name=value"; throws Error if there is no '='.
  void set(std::string_view name_value);
  // Whether `name` is a setting (for command lines that mix settings with other flags).
  static bool known(std::string_view name);
  // Whether `name` is a true/false setting (drop_last, shuffle, ordered).
  static bool is_flag(std::string_view name);
  // Every setting's name, with '_'.
  static std::vector<std::string> names();

  // Loads the script with what shapes the load, then applies the launcher's
  // rank and world size (torchrun, MPI, SLURM; sluice/launcher.h) and the
  // rest of the settings. Returns the launcher's name, or "" if none, in *launcher.
  Script load(std::string* launcher = nullptr) const;
  // The settings that apply after the load, onto a script's options.
  void apply(Options& options) const;
  // Every setting onto options that come from no script (a producer written in
  // C++ or Python): epochs, workers, prefetch (as slots), seed and on_error
  // too, after the launcher's rank and world size, as load() does. Throws
  // Error if the launcher's variables are malformed.
  void apply_all(Options& options) const;

  const std::string& path() const { return script_.path; }
  bool sets_shard() const { return rank_ || world_size_; }

 private:
  ScriptOptions script_;
  std::optional<std::uint32_t> batch_size_, global_batch_size_, rank_, world_size_, max_retries_, batch_timeout_ms_,
      held_timeout_ms_;
  std::optional<std::uint64_t> worker_memory_mb_, memory_budget_mb_;
  std::optional<bool> drop_last_, shuffle_, ordered_;
  std::optional<SkipFill> skip_fill_;
  std::optional<ShardPolicy> shard_policy_;
};

}  // namespace sluice
