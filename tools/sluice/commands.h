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

// SIGINT and SIGTERM handlers for `sluice run`, installed as main()'s first
// instruction so that a signal during start-up (parsing, loading the script,
// starting the workers) still ends the run cleanly with its state saved.
// Every other command calls release_signal_handlers(), which restores the
// default actions and delivers a signal that came in the meantime.
void install_signal_handlers();
void release_signal_handlers();

}  // namespace sluice::cli
