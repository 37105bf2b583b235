// run_args.h: the command lines of `sluice run` and `sluice peek`, parsed.
//
// Both take a pipeline script and every run setting by name (sluice/run_settings.h:
// --workers 2, -w2, --no-shuffle, ...), plus options of their own.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sluice/options.h"
#include "sluice/run_settings.h"

namespace sluice::cli {

struct RunArgs {
  RunSettings settings;       // the script and every setting given by name (--epochs, --workers, ...)
  std::uint64_t batches = 0;  // 0: no limit
  std::optional<double> interval_s;
  bool quiet = false;
  bool help = false;
  std::string record_path;
  std::string skip_log_path;
  std::string state_path;  // empty: the default, see default_state_path()
  std::string resume_path;
  std::string trace_path;  // --trace: a Chrome trace of the run
};

struct UsageError {
  std::string message;
};

// A command's own options (those that are not run settings), by long name.
struct OwnOptions {
  std::span<const std::string_view> with_value;  // "--batches N" or "--batches=N"
  std::span<const std::string_view> flags;       // "--quiet"
};

// What a settings command line says.
struct SettingsLine {
  RunSettings settings;
  bool help = false;
  std::vector<std::pair<std::string, std::string>> own;  // own options in order, with values ("" for flags)
};

// Parses argv[1..argc) (argv[0] is the command, e.g. "peek"): the script, run
// settings, -h/--help, and `own`. Throws UsageError naming the option and
// what it expects, suggesting the option a typo meant.
SettingsLine parse_settings_line(int argc, char** argv, std::string_view command, const OwnOptions& own);

// The count an option takes: an integer in [0, max]. Throws UsageError.
std::uint64_t parse_count(std::string_view option, std::string_view text, std::uint64_t max);

// The settings part of `sluice run --help`, from the table of
// sluice/settings.h: each setting's option, short form, what it takes, help
// and default, wrapped to 80 columns.
std::string settings_help();

// Where the state goes without --state: sluice-state.json, or
// sluice-state.rank{rank}.json when the run has more than one rank, so that
// ranks sharing a directory never write the same file.
std::string default_state_path(std::uint32_t world_size);

// Parses argv[1..argc) (argv[0] is "run"). Throws UsageError naming the
// option and what it expects.
RunArgs parse_run_args(int argc, char** argv);

}  // namespace sluice::cli
