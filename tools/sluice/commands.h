// commands.h: the `sluice` subcommands implemented outside main.cpp.
#pragma once

namespace sluice::cli {

// `sluice run PIPELINE.lua [options]`: runs a pipeline script through real
// workers, discards the batches, and reports throughput and where the time
// went. argv[0] is "run". Returns the process exit status: 0 on success, 1 if
// the pipeline failed, 2 on a usage error. Prints its own messages.
int run_command(int argc, char** argv);

// The text of `sluice run --help`.
const char* run_help();

}  // namespace sluice::cli
