// pytorch_baseline.h: runs the PyTorch DataLoader side of a benchmark case.
//
// The script (tools/bench/pytorch_baseline.py) is compiled into the binary and
// run with /usr/bin/python3 (Debian's python3-torch), or with the interpreter
// named by $SLUICE_BENCH_PYTHON (a path, or a name looked up in PATH). A
// missing interpreter, a missing torch or a failing script is not an error of
// the benchmark: the result then carries no figures and a note saying why.
//
// Thread safety: spawns and waits for one child process per call.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace sluice::bench {

struct PyTorchBaseline {
  std::optional<std::vector<double>> per_run;  // one rate per run; absent if not measured
  std::string note;                            // why it was not measured, else empty
};

// Runs `python3 -c <script> args...`; args start with the mode ("transport" or
// "handoff"). The script's stdout and stderr are captured, never shown.
PyTorchBaseline run_pytorch_baseline(const std::vector<std::string>& args);

// The same result without running anything, for --no-pytorch.
PyTorchBaseline pytorch_skipped(std::string note);

}  // namespace sluice::bench
