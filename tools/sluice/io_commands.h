// The `sluice inspect` and `sluice index` commands (data formats, runtime/io).
//
// Each takes argc/argv with argv[0] the subcommand name, prints to stdout,
// reports errors on stderr, and returns the process exit status (0 ok, 1 a
// file could not be read, 2 bad usage). Never throws.
#pragma once

namespace sluice::cli {

int inspect_command(int argc, char** argv);
int index_command(int argc, char** argv);

}  // namespace sluice::cli
