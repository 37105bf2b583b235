#!/usr/bin/env bash
# The issue-8 benchmark, in one run:
#   runtime/ops/bench/run.sh BUILD_DIR [REPEATS] [COPIES]
# Real photos from Debian's python3-skimage and python3-sklearn (JPEGs as
# shipped; photographic PNGs encoded once as JPEG quality 90 by PIL), repeated
# COPIES times over 10 class folders; then examples/imagenet.lua in Sluice and
# the same pipeline in PyTorch's DataLoader, with 1 and 2 workers, REPEATS
# times each, interleaved. Prints every run as JSON and the medians.
set -euo pipefail
build=$(realpath "$1")
repeats=${2:-3}
copies=${3:-40}
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

(cd "$work" && apt-get download python3-skimage python3-sklearn >/dev/null &&
  for deb in *.deb; do dpkg-deb -x "$deb" pkg; done)
/usr/bin/python3 - "$work" "$copies" <<'PY'
import glob, os, shutil, sys
from PIL import Image
work, copies = sys.argv[1], int(sys.argv[2])
pkg = work + "/pkg/usr/lib/python3/dist-packages"
jpegs = [p for p in glob.glob(pkg + "/skimage/data/*.jpg") if "truncated" not in p]
jpegs += glob.glob(pkg + "/sklearn/datasets/images/*.jpg")
photos = ["astronaut", "coffee", "chelsea", "motorcycle_left", "motorcycle_right", "rocket",
          "camera", "coins", "brick", "gravel", "grass", "ihc"]
os.makedirs(work + "/photos")
for name in photos:
    p = pkg + "/skimage/data/" + name + ".png"
    if os.path.exists(p):
        Image.open(p).convert("RGB").save(work + "/photos/" + name + ".jpg", quality=90)
for p in jpegs:
    shutil.copy(p, work + "/photos/")
files = sorted(glob.glob(work + "/photos/*.jpg"))
for c in range(10):
    os.makedirs("%s/train/class%d" % (work, c))
n = 0
for k in range(copies):
    for f in files:
        shutil.copy(f, "%s/train/class%d/%d_%s" % (work, n % 10, k, os.path.basename(f)))
        n += 1
print("bench: %d photos (%s), %d images" % (len(files), ", ".join(os.path.basename(f) for f in files), n),
      file=sys.stderr)
PY
cp "$repo/examples/imagenet.lua" "$work/pipeline.lua"

results="$work/results.jsonl"
for r in $(seq "$repeats"); do
  for w in 1 2; do
    "$build/runtime/ops/bench/ops_imagenet_bench" "$work/pipeline.lua" "$w" 2 | tee -a "$results"
    /usr/bin/python3 "$here/torch_imagenet.py" "$work" "$w" 2 | tee -a "$results"
  done
done
/usr/bin/python3 - "$results" <<'PY'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
med = {}
for side in ("sluice", "torch"):
    for w in (1, 2):
        med[side, w] = statistics.median(r["images_per_s"] for r in runs if r["side"] == side and r["workers"] == w)
for w in (1, 2):
    print("workers=%d  sluice %.1f img/s (%.1f per core)  torch %.1f img/s (%.1f per core)  ratio %.2fx" % (
        w, med["sluice", w], med["sluice", w] / w, med["torch", w], med["torch", w] / w, med["sluice", w] / med["torch", w]))
for side in ("sluice", "torch"):
    print("%s scaling 1 -> 2 workers: %.2fx" % (side, med[side, 2] / med[side, 1]))
PY
