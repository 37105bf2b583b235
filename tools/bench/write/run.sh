#!/usr/bin/env bash
# The write benchmark: converting a folder of real photos to WebDataset tar
# shards with `sluice write` against what users write today, in one run:
#   tools/bench/write/run.sh BUILD_DIR [REPEATS] [COPIES] [RAW_COPIES]
# The photos: the ImageNet benchmark's mix (scripting/bench/imagenet/photos.py:
# real photos from Debian's python3-skimage and python3-sklearn, and JPEGs
# upscaled from them, 0.1-18 MP), COPIES times (default 2) to re-encode and
# RAW_COPIES times (default 20) to pass through unchanged. See bench.py for
# the sides; KEEP=1 keeps the work folder.
set -euo pipefail
build=$(realpath "$1")
repeats=${2:-5}
copies=${3:-2}
raw_copies=${4:-20}
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
work=$(mktemp -d)
[ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$work"' EXIT

"$repo/scripting/bench/imagenet/photos.sh" "$work"
# copy_mix DIR N: N copies of every photo of the mix in DIR/train/CLASS/.
copy_mix() {
  for c in $(seq "$2"); do
    for class in "$work/sets/mix/train/"*; do
      mkdir -p "$1/train/$(basename "$class")"
      for f in "$class"/*.jpg; do cp "$f" "$1/train/$(basename "$class")/c${c}_$(basename "$f")"; done
    done
  done
}
copy_mix "$work/run" "$copies"
copy_mix "$work/raw" "$raw_copies"
/usr/bin/python3 "$here/bench.py" "$build/tools/sluice" "$work/run" "$work/raw" "$repeats"
