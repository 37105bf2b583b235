#!/usr/bin/env bash
# Builds every fuzz target with clang's libFuzzer (+ASan+UBSan) and runs each
# for a short time (FUZZ_SECONDS, default 12) from its seed corpus. A crash
# fails the run and leaves the input in tests/fuzz/regressions/TARGET/, where
# the regular test suite replays it from then on.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${FUZZ_SECONDS:-12}

CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DSLUICE_FUZZ=ON -DSLUICE_RUNTIME_ONLY=OFF -DSLUICE_BUILD_CUDA=OFF
targets=$(sed -n 's/^set(SLUICE_FUZZ_TARGETS \(.*\))$/\1/p' tests/fuzz/CMakeLists.txt)
# Built together, run two at a time on two cores (as many as there are cores):
# each still gets its whole FUZZ_SECONDS of one core.
# shellcheck disable=SC2086
cmake --build build-fuzz -j"$(nproc)" --target $(printf 'fuzz_%s ' $targets)

fuzz_one() {
  local t=$1
  local work="build-fuzz/corpus/$t"
  mkdir -p "$work" "tests/fuzz/regressions/$t"
  cp -n tests/fuzz/corpus/"$t"/* "$work"/ 2>/dev/null || true
  case $t in  # real files of the format, when shared/data is there
    tfrecord) find ../shared/data/tfrecord -name '*.tfrecord' -exec cp -n {} "$work"/ \; 2>/dev/null || true ;;
    tar) find ../shared/data/webdataset -name '*.tar' -size -200k -exec cp -n {} "$work"/ \; 2>/dev/null || true ;;
    npy) find ../shared/data/npy -name '*.npy' -exec cp -n {} "$work"/ \; 2>/dev/null || true ;;
    parquet) find tests/io/data/parquet-testing -name '*.parquet' -size -100k -exec cp -n {} "$work"/ \; ;;
    image) find ../shared/data/images/pillow-tests \( -name '*.jpg' -o -name '*.png' \) -size -20k \
             -exec cp -n {} "$work"/ \; 2>/dev/null || true ;;
  esac
  local log="build-fuzz/fuzz-$t.log"
  if ! "build-fuzz/tests/fuzz/fuzz_$t" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 \
      -artifact_prefix="tests/fuzz/regressions/$t/" "$work" > "$log" 2>&1; then
    tail -n 80 "$log"
    echo "fuzz: $t found a crash; the input is in tests/fuzz/regressions/$t/ (full log: $log)"
    return 1
  fi
  echo "== fuzz $t for ${seconds}s: $(grep -E "^Done [0-9]+ runs" "$log" || echo "done")"
}

jobs=$(nproc)
running=()
failed=0
for t in $targets; do
  fuzz_one "$t" &
  running+=($!)
  if (( ${#running[@]} >= jobs )); then
    wait "${running[0]}" || failed=1
    running=("${running[@]:1}")
  fi
done
for pid in "${running[@]}"; do wait "$pid" || failed=1; done
(( failed == 0 )) || exit 1
echo "fuzz: no crash in $(echo $targets | wc -w) targets"
