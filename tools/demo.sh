#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine, builds the `sluice` command line, and runs
# the quickstart pipeline (synthetic data: nothing to download). It builds that
# one target and what it links, from only the packages it needs: not the
# tests, benchmarks, Python package or libsluice. tools/test.sh installs and
# builds everything, in the same build/.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
bash tools/install-deps.sh --cli
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSLUICE_BUILD_TESTS=OFF
cmake --build build -j"$(nproc)" --target sluice
echo "demo: set up and built in $((SECONDS - start)) s"
./build/tools/sluice run examples/quickstart.lua "$@"
