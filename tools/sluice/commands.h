// commands.h: the `sluice` subcommands implemented outside main.cpp.
#pragma once

namespace sluice::cli {

// `sluice run PIPELINE.lua [options]`: runs a pipeline script through real
// workers, discards the batches, and reports throughput and where the time
// went. argv[0] is "run". Returns the process exit status: 0 on success, 1 if
// the pipeline failed, 2 on a usage error. Prints its own messages.
int run_command(int argc, char** argv);

// `sluice peek PIPELINE.lua [--batches N] [--png DIR] [settings]`: the
// first batches of a pipeline, shown: each field's dtype, shape and value
// statistics, the samples' files and class names, and image fields as PNG
// contact sheets. Same exit statuses as run_command.
int peek_command(int argc, char** argv);

}  // namespace sluice::cli
