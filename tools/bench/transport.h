// transport.h: the transport case of `sluice bench`.
//
// Workers produce 64 MiB float32 batches with no compute (the producer fills
// the field with the batch index); the consumer reads one value per 4 KiB page
// of every batch. Reports the delivered GB/s against a single-thread memcpy of
// 64 MiB measured in the same run (target: ratio >= 0.8), and against PyTorch's
// DataLoader moving the same tensors with the same number of workers.
#pragma once

#include "harness.h"

namespace sluice::bench {

// Runs options.runs measured runs, each with a fresh Loader, and prints the
// medians (a table, or one JSON object with options.json) on stdout.
// Throws on a runtime failure or a wrong batch.
void run_transport_case(const CaseOptions& options);

}  // namespace sluice::bench
