#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine, builds the `sluice` command line, and runs
# the quickstart pipeline (synthetic data: nothing to download). It builds that
# one target and what it links, not the tests, benchmarks or libsluice:
# tools/test.sh builds everything, in the same build/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build -j"$(nproc)" --target sluice
./build/tools/sluice run examples/quickstart.lua "$@"
