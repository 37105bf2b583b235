"""Runs the write benchmark's sides on a photo folder, interleaved, and prints
medians and ratios (run.sh prepares the photos).

    /usr/bin/python3 bench.py SLUICE_CLI WORK_DIR RAW_DIR REPEATS

WORK_DIR/train/CLASS/*.jpg: the photos; RAW_DIR/train/CLASS/*.jpg: more of
them for the raw sides (copying bytes is fast: a small folder would time
start-up). Sides, each timed as the whole
command's wall time (start-up included), every repeat running each once:
  sluice N    sluice write resize.lua --to DIR -w N       (N = 1, 2)
  pil N       pil_pool.py with a Pool of N processes       (the same N)
  raw         sluice write passthrough.lua (bytes unchanged), 1 worker
  tar         tar cf of the same files
  tar+sync    the same, then `sync FILE` (sluice fsyncs each shard before
              publishing it: the durable comparison)
Environment: SIDES=raw,tar,tar+sync runs those sides only; BASE_CLI=PATH adds
the side raw-base (the raw side with another build's sluice, e.g. the commit
before a change: before/after in one run). One warm-up round first (page cache, PIL imports). Prints one JSON line per
run, then per worker count: images/s per core (medians), sluice/pil (the
median of per-repeat ratios), and raw/tar throughput; and the first-touch
cost of a fresh page on this machine, measured here.
"""
import json
import mmap
import os
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def first_touch_us():
    """Median cost of the first write to a fresh anonymous page (as tools/bench/harness.cpp)."""
    costs = []
    for _ in range(3):
        size = 64 << 20
        m = mmap.mmap(-1, size)
        t = time.perf_counter()
        for offset in range(0, size, 4096):
            m[offset] = 1
        costs.append((time.perf_counter() - t) / (size // 4096) * 1e6)
        m.close()
    return statistics.median(costs)


def timed(cmd, cwd):
    t = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t


def main():
    cli, work, raw_dir = (os.path.abspath(a) for a in sys.argv[1:4])
    repeats = int(sys.argv[4])
    listing = lambda root: sorted(os.path.join(d, f) for d, _, fs in os.walk(os.path.join(root, "train"))
                                  for f in fs if f.endswith(".jpg"))
    photos, raw_photos = listing(work), listing(raw_dir)
    train = os.path.join(work, "train")
    raw_bytes = sum(os.path.getsize(p) for p in raw_photos)
    shutil.copy(os.path.join(HERE, "resize.lua"), work)
    with open(os.path.join(HERE, "passthrough.lua")) as f:
        text = f.read().replace("MAX_BYTES", str(max(os.path.getsize(p) for p in raw_photos)))
    with open(os.path.join(raw_dir, "passthrough.lua"), "w") as f:
        f.write(text)
    out = os.path.join(work, "out")

    def run(side, workers):
        shutil.rmtree(out, ignore_errors=True)
        os.makedirs(out)
        if side == "sluice":
            cmd = [cli, "write", "resize.lua", "--to", out, "-w", str(workers)]
        elif side == "pil":
            cmd = [sys.executable, os.path.join(HERE, "pil_pool.py"), train, os.path.join(out, "a.tar"), str(workers)]
        elif side in ("raw", "raw-base"):
            cmd = [cli if side == "raw" else os.environ["BASE_CLI"], "write", "passthrough.lua", "--to", out,
                   "-w", str(workers)]
        elif side == "tar":
            cmd = ["tar", "cf", os.path.join(out, "a.tar"), "train"]
        else:
            cmd = ["sh", "-c", "tar cf %s train && sync %s" % ((os.path.join(out, "a.tar"),) * 2)]
        raw = side in ("raw", "raw-base", "tar", "tar+sync")
        seconds = timed(cmd, raw_dir if raw else work)
        n = len(raw_photos if raw else photos)
        r = {"side": side, "workers": workers, "images": n, "seconds": round(seconds, 4),
             "images_per_s": round(n / seconds, 2)}
        if raw:
            r["mb_per_s"] = round(raw_bytes / seconds / 1e6, 1)
        return r

    sides = [("sluice", 1), ("pil", 1), ("sluice", 2), ("pil", 2), ("raw", 1), ("tar", 1), ("tar+sync", 1)]
    if os.environ.get("BASE_CLI"):
        sides.append(("raw-base", 1))
    if os.environ.get("SIDES"):
        chosen = os.environ["SIDES"].split(",") + (["raw-base"] if os.environ.get("BASE_CLI") else [])
        sides = [(s, w) for s, w in sides if s in chosen]
    for side, w in sides:  # warm-up
        run(side, w)
    runs = []
    for rep in range(repeats):
        for side, w in sides:
            r = run(side, w)
            r["repeat"] = rep
            print(json.dumps(r), flush=True)
            runs.append(r)
    touch = first_touch_us()
    speed = {}
    for r in runs:
        speed.setdefault((r["side"], r["workers"]), {})[r["repeat"]] = r["images_per_s"]
    med = lambda k: statistics.median(speed[k].values())
    ratio = lambda a, b: statistics.median(speed[a][k] / speed[b][k] for k in speed[a])
    print("%d photos to re-encode, %d (%.1f MB) to pass through; %d repeats; medians; ratios are medians of "
          "per-repeat ratios; first touch of a fresh page: %.2f us" % (len(photos), len(raw_photos), raw_bytes / 1e6,
                                                                      repeats, touch))
    for w in (1, 2) if ("sluice", w) in speed and ("pil", w) in speed else ():
        print("re-encode, %d worker%s: sluice %.1f images/s per core, PIL Pool %.1f; sluice/PIL %.2fx "
              "(first touch %.2f us)" % (w, "" if w == 1 else "s", med(("sluice", w)) / w, med(("pil", w)) / w,
                                         ratio(("sluice", w), ("pil", w)), touch))
    mb = lambda side: med((side, 1)) * raw_bytes / len(raw_photos) / 1e6
    print("raw pass-through, 1 worker: sluice %.0f MB/s, tar cf %.0f MB/s, tar cf + sync %.0f MB/s; sluice/tar %.2f, "
          "sluice/(tar + sync) %.2f (first touch %.2f us)" % (mb("raw"), mb("tar"), mb("tar+sync"),
                                                           ratio(("raw", 1), ("tar", 1)),
                                                           ratio(("raw", 1), ("tar+sync", 1)), touch))
    if ("raw-base", 1) in speed:
        print("raw pass-through, BASE_CLI's sluice: %.0f MB/s; sluice/tar %.2f, sluice/(tar + sync) %.2f; "
              "this sluice / BASE_CLI's %.2f (first touch %.2f us)" % (mb("raw-base"), ratio(("raw-base", 1), ("tar", 1)),
                                                                      ratio(("raw-base", 1), ("tar+sync", 1)),
                                                                      ratio(("raw", 1), ("raw-base", 1)), touch))


if __name__ == "__main__":
    main()
