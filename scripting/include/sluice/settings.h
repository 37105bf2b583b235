// sluice/settings.h: every run setting, declared once.
//
// A run setting is a name that `sluice run --name value`, the C API's
// "name=value" strings, Python's keyword arguments and (for some) a
// pipeline.lua all take. This table is where each is declared: its name, what
// it takes, its default and one line of help. RunSettings (sluice/run_settings.h)
// parses and applies them from it, `sluice run --help` and sluice.settings()
// list them from it, and tests check docs/command-line.md and sluice.lua
// against it.
//
//   for (const sluice::Setting& s : sluice::settings()) std::printf("%s\n", s.name.c_str());
//
// Thread safety: the table is built once (thread-safe) and never changes.
#pragma once

#include "sluice/export.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sluice {

enum class SettingKind : std::uint8_t {
  count,   // an integer in a range; some also take "auto" (takes says so)
  flag,    // true or false (1 or 0); a command line also has --name and --no-name
  choice,  // one of a few names (takes lists them)
  path,    // a file system path, not empty
};

struct SLUICE_API Setting {
  std::string name;           // with '_' ('-' is the same everywhere a name is read)
  SettingKind kind = SettingKind::count;
  std::string takes;          // what it takes, for people: "an integer in [1, 256] or auto", "fail or skip"
  std::string default_value;  // as text, as RunSettings::set takes it; "" = unset (global_batch_size)
  std::string help;           // one line
  bool pipeline = false;      // a pipeline.lua may set it too (sluice.pipeline{name = ...})
};

// Every setting, in the order help and error messages list them.
SLUICE_API const std::vector<Setting>& settings();

// The setting called `name` ("--batch-timeout-ms", "batch-timeout-ms" and
// "batch_timeout_ms" are one name), or null.
SLUICE_API const Setting* find_setting(std::string_view name);

}  // namespace sluice
