#!/usr/bin/env bash
# Builds the runtime core (sluice_runtime + runtime_tests) for aarch64 with
# Debian's cross compiler and runs every runtime test under qemu-user, so the
# x86-free code paths and the memory orderings are exercised as an aarch64
# binary (Grace, Graviton). Run from anywhere; uses build-aarch64/ in the repo.
#
# - Packages: g++-aarch64-linux-gnu and qemu-user, passed to
#   tools/install-deps.sh as extras (a plain install-deps.sh run, amd64 only,
#   does not install them). The runtime's other dependencies are header-only
#   (concurrentqueue, dlpack, Catch2 v2) or used header-only here (xxHash, see
#   runtime/CMakeLists.txt), so no arm64 (multiarch) package is needed.
# - Configuration: tools/cross/aarch64-linux-gnu.cmake; SLUICE_CORE_ONLY leaves
#   out runtime/io, ops, CUDA, scripting and tools, whose libraries are
#   installed for amd64 only.
# - Tests: the whole runtime_tests, not a subset by tag: it takes about a
#   minute under qemu on 2 cores. ctest runs each test through
#   CMAKE_CROSSCOMPILING_EMULATOR (qemu-aarch64 -L /usr/aarch64-linux-gnu),
#   and catch_discover_tests lists them the same way at build time.
#   A test that cannot work under qemu-user detects it and calls
#   SKIP_TEST("why") (tests/skip.h): under ctest it exits with 77, which
#   ctest reports as skipped, never as passed. Detection rather than an
#   exclusion list here: the reason stays next to the test, and the test still
#   runs wherever it can (natively, or on real arm64 hardware).
#   Today one test skips under qemu: the start-up signal state of workers,
#   since /proc/PID/status shows qemu's own signal handlers.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)

bash tools/install-deps.sh g++-aarch64-linux-gnu qemu-user

echo "== aarch64 cross build of the runtime core, tests under qemu-user"
start=$SECONDS
cmake -S . -B build-aarch64 -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_TOOLCHAIN_FILE=tools/cross/aarch64-linux-gnu.cmake \
  -DSLUICE_CORE_ONLY=ON -DSLUICE_RUNTIME_ONLY=ON -DSLUICE_BUILD_CUDA=OFF
cmake --build build-aarch64 -j"$jobs"
built=$SECONDS
ctest --test-dir build-aarch64 -j"$jobs" --output-on-failure
echo "cross-test: build $((built - start)) s, tests under qemu-aarch64 $((SECONDS - built)) s"
