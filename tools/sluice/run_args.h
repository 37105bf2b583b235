// run_args.h: the command line of `sluice run`, parsed.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

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

// Where the state goes without --state: sluice-state.json, or
// sluice-state.rank{rank}.json when the run has more than one rank, so that
// ranks sharing a directory never write the same file.
std::string default_state_path(std::uint32_t world_size);

// Parses argv[1..argc) (argv[0] is "run"). Throws UsageError naming the
// option and what it expects.
RunArgs parse_run_args(int argc, char** argv);

}  // namespace sluice::cli
