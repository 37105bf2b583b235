// bench.h: the `sluice bench` command.
//
//   sluice bench transport [--json] [--runs N] [--workers N] ...
//   sluice bench handoff   [--json] [--runs N] [--workers N] ...
//
// transport measures how fast 64 MiB batches reach the consumer, against a
// single-thread memcpy measured in the same run; handoff measures the cost per
// batch of small batches. Both also run PyTorch's DataLoader on the same work.
// `--help` lists every option.
#pragma once

namespace sluice::bench {

// argv[0] is "bench", argv[1] the case. Prints a table, or exactly one JSON
// object with --json, on stdout; errors go to stderr. Returns the process exit
// status: 0 on success, 1 if the benchmark failed, 2 on a usage error.
int bench_command(int argc, char** argv);

}  // namespace sluice::bench
