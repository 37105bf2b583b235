// sluice/run_settings.h: the settings of a run by name, the same names for
// `sluice run --name value`, the C API's "name=value" strings and Python's
// keyword arguments.
//
//   sluice::RunSettings settings("train.lua");
//   settings.set("workers", "8");                  // throws Error on an unknown name or a bad value
//   sluice::Script script = settings.load();      // pipeline.lua, the launcher's rank, then the settings
//   sluice::Loader loader(script.options);
//
// The names, what each takes and its default are sluice/settings.h's table
// (`sluice run --help` lists them). epochs, workers, prefetch, seed and on_error
// also shape the load (see ScriptOptions); prefetch sets Options::slots.
// global_batch_size sets batch_size to global_batch_size / world_size once the
// world size is known (an error when it does not divide); device is checked
// only (this build delivers batches in host memory).
//
// Thread safety: plain data.
#pragma once

#include "sluice/export.h"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
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
  // Whether `name` is a true/false setting (SettingKind::flag: drop_last, shuffle, ordered).
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

  // The settings that options hold, by name with their values as text (as
  // set() reads them back), in the table's order: every setting but device and
  // global_batch_size, which Options do not hold.
  static std::vector<std::pair<std::string, std::string>> values(const Options& options);

  const std::string& path() const { return script_.path; }
  // What shapes the load (epochs, workers, ..., the remote transport's
  // retries and timeout: also what `sluice write` uploads with).
  const ScriptOptions& script_options() const { return script_; }
  bool sets_shard() const;

 private:
  std::optional<std::uint64_t> given(std::string_view name) const;

  ScriptOptions script_;
  // Every setting given, by its index in the table, with its value parsed
  // (see scripting/src/setting_rows.h); the last one given of a name counts.
  std::vector<std::pair<std::size_t, std::uint64_t>> given_;
};

}  // namespace sluice
