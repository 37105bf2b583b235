#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine, builds Sluice, and runs the quickstart
# pipeline (synthetic data: nothing to download).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build -j"$(nproc)"
./build/tools/sluice run examples/quickstart.lua "$@"
