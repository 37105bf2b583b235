#!/usr/bin/env bash
# The ImageNet-pipeline benchmark, in one run:
#   scripting/bench/imagenet/run.sh BUILD_DIR [REPEATS]
# The photo set (photos.py: real photos from Debian's python3-skimage and
# python3-sklearn, and large JPEGs upscaled from them, 0.12-18 MP, baseline and
# progressive) as a mix and per size class. Sides, all interleaved, REPEATS
# times (default 5), medians reported:
#   sluice   examples/imagenet.lua (image.decode_crop: region decode + fused pass)
#   split    imagenet_split.lua (decode the whole scaled image, resize, normalize)
#   torch    PIL + torchvision in PyTorch's DataLoader
#   draft    PIL with draft() (DCT-scaled decode) in the DataLoader
#   floor    one core doing nothing but PIL's draft() + load() of the same kind of crops
# The mix runs with 1 and 2 workers, each size class with 1. Prints every run
# as JSON (also left in results.jsonl beside photos.txt in the work folder
# when KEEP=1) and the medians and ratios.
set -euo pipefail
build=$(realpath "$1")
repeats=${2:-5}
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
work=$(mktemp -d)
[ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$work"' EXIT

"$here/photos.sh" "$work"
for set in mix small medium large huge; do
  cp "$repo/examples/imagenet.lua" "$work/sets/$set/pipeline.lua"
  cp "$here/imagenet_split.lua" "$work/sets/$set/split.lua"
done

results="$work/results.jsonl"
bench=$build/scripting/bench/imagenet/sluice_imagenet_bench
# run SET WORKERS EPOCHS BATCH SIDE...
run() {
  local set=$1 workers=$2 epochs=$3 batch=$4
  shift 4
  for side in "$@"; do
    case $side in
      sluice) "$bench" "$work/sets/$set/pipeline.lua" "$workers" "$epochs" "$batch" sluice ;;
      split) "$bench" "$work/sets/$set/split.lua" "$workers" "$epochs" "$batch" split ;;
      *) /usr/bin/python3 "$here/torch_imagenet.py" "$side" "$work/sets/$set" "$workers" "$epochs" "$batch" ;;
    esac | sed "s/^{/{\"set\": \"$set\", /" | tee -a "$results"
  done
}
for r in $(seq "$repeats"); do
  echo "== repeat $r of $repeats, load: $(cut -d' ' -f1-3 /proc/loadavg)"
  # The mix for 8 epochs (seconds per side, not a moment of the shared
  # machine's load); PIL + torchvision, ten times slower, for 4.
  run mix 1 8 16 sluice split draft floor
  run mix 1 4 16 torch
  run mix 2 8 16 sluice split draft
  run mix 2 4 16 torch
  run small 1 2 16 sluice split draft floor
  run medium 1 2 16 sluice split draft floor
  run large 1 3 8 sluice split draft floor
  run huge 1 4 4 sluice split draft floor
done
cp "$work/sets/photos.txt" "$work/photos.txt"
/usr/bin/python3 - "$results" <<'PY'
# Medians of images/s, and ratios as the median over repeats of each repeat's
# ratio (its runs were side by side in time, so a change of load between
# repeats cancels out).
import json, statistics, sys
runs, repeat = [], -1
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["set"] == "mix" and r["workers"] == 1 and r["side"] == "sluice":
        repeat += 1
    r["repeat"] = repeat
    runs.append(r)
speed = {}
for r in runs:
    speed.setdefault((r["set"], r["workers"], r["side"]), {})[r["repeat"]] = r["images_per_s"]
med = lambda key: statistics.median(speed[key].values())
def ratio(a, b):
    both = [speed[a][k] / speed[b][k] for k in speed[a] if k in speed.get(b, {})]
    return statistics.median(both) if both else float("nan")
print("medians: images/s per core; ratios: medians of per-repeat ratios")
for set_name in ("mix", "small", "medium", "large", "huge"):
    for w in (1, 2):
        s = (set_name, w, "sluice")
        if s not in speed:
            continue
        line = "%-6s workers=%d  sluice %6.1f" % (set_name, w, med(s) / w)
        for side in ("split", "draft", "torch"):
            if (set_name, w, side) in speed:
                line += "  %s %6.1f" % (side, med((set_name, w, side)) / w)
        for side in ("draft", "torch", "split"):
            if (set_name, w, side) in speed:
                line += "  sluice/%s %.2fx" % (side, ratio(s, (set_name, w, side)))
        if w == 1 and (set_name, 1, "floor") in speed:
            line += "  floor %6.1f  sluice/floor %.2f" % (med((set_name, 1, "floor")), ratio(s, (set_name, 1, "floor")))
        print(line)
for side in ("sluice", "split", "draft", "torch"):
    if ("mix", 2, side) in speed:
        print("%s scaling 1 -> 2 workers (mix): %.2fx" % (side, ratio(("mix", 2, side), ("mix", 1, side))))
PY
