#!/usr/bin/env bash
# Builds Sluice and runs the whole test suite: the regular build, then the
# runtime tests under AddressSanitizer + UndefinedBehaviorSanitizer, then under
# ThreadSanitizer, then each fuzz target briefly. Run from anywhere; uses
# build*/ in the repo.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
# Each stage's start, with the seconds since this script began: where CI's time goes.
stage() { echo "== $* [$(date -u +%T), ${SECONDS} s in]"; }

bash tools/install-deps.sh

stage "build and test (RelWithDebInfo)"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSLUICE_BUILD_TESTS=ON  # demo.sh's build/ has them off
cmake --build build -j"$jobs"
ctest --test-dir build -j"$jobs" --output-on-failure

stage "Python package: pip install into build-python/venv, then pytest (exit 5, no tests, fails)"
# The extension is built in build/, from the libraries built there just now.
SLUICE_CMAKE_BUILD_DIR="$PWD/build" bash tools/python-test.sh

stage "runtime tests under ASan + UBSan"
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DSLUICE_RUNTIME_ONLY=ON -DSLUICE_BUILD_CUDA=OFF \
  -DSLUICE_SANITIZE=address,undefined
cmake --build build-asan -j"$jobs"
ctest --test-dir build-asan -j"$jobs" --output-on-failure

stage "runtime tests under TSan (rings, release queue, loader, CUDA staging thread)"
cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DSLUICE_RUNTIME_ONLY=ON \
  -DSLUICE_SANITIZE=thread
cmake --build build-tsan -j"$jobs"
# Not the image operators' tests, the fuzz replays, the Parquet oracle files
# nor the tokenizer's equivalence with libsentencepiece: single-threaded
# decoding, which the ASan + UBSan stage above already runs (~110 s of this stage).
TSAN_OPTIONS="suppressions=$PWD/tools/tsan.supp" ctest --test-dir build-tsan -j"$jobs" --output-on-failure \
  -E '^(ops|fuzz-replay)[.]|^io:parquet oracle|^text:.*(unigram encoder|SentencePiece ids)'

stage "aarch64 cross build"
bash tools/cross-test.sh

stage "fuzz targets, briefly (libFuzzer)"
bash tools/fuzz.sh
stage "done"
