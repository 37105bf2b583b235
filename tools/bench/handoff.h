// handoff.h: the handoff (per-batch overhead) case of `sluice bench`.
//
// Batches of 256 samples x 256 bytes from a trivial per-sample producer (each
// sample starts with its 8-byte dataset index), a deep slot pool, and a
// consumer that checks the first sample and reads one value per 4 KiB page.
// What is left is the runtime's cost of handing a batch over. Reports
// batches/s and samples/s (target: >= 100,000 batches/s), and the ratio to
// PyTorch's DataLoader moving the same batches with the same number of workers.
#pragma once

#include "harness.h"

namespace sluice::bench {

// Runs options.runs measured runs, each with a fresh Loader, and prints the
// medians (a table, or one JSON object with options.json) on stdout.
// Throws on a runtime failure or a wrong batch.
void run_handoff_case(const CaseOptions& options);

}  // namespace sluice::bench
