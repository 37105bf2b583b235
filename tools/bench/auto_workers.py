#!/usr/bin/env python3
"""workers = "auto" against a sweep of fixed worker counts, through `sluice run`.

Three pipelines over sluice.range, batches of 8 float32[4] samples:
  cpu    about 2 ms of arithmetic per sample, never off the CPU
  wait   5 ms asleep per sample (ffi usleep), as a read from a slow store
  tiny   one store per sample: the consumer and the hand-off bound the run

Each configuration runs `sluice run` for --seconds (endless epochs, stopped by
SIGINT) and is measured by its steady throughput: samples/s over the last
--window seconds, from the progress lines, so auto is judged where it ends
(after tuning) and fixed counts after their start-up. Each figure is the
median of --runs runs; the ratio is auto's median over the best fixed
median, measured in the same invocation. Target: >= 0.9.

usage: tools/bench/auto_workers.py [--sluice build/tools/sluice] [--runs 3]
       [--seconds 6] [--window 3] [--pipelines cpu,wait,tiny]
"""
import argparse
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HEAD = """local sluice = require("sluice")
local ffi = require("ffi")
ffi.cdef[[int usleep(unsigned int usec);]]
return sluice.pipeline {
  source = sluice.range(1000000),
  fields = { { "x", "float32", { 4 } } },
  batch_size = 8, epochs = 0,
  map = function(i, ctx)
    local x = ctx.out.x
"""
TAIL = """    return { x = x }
  end,
}
"""
MAPS = {
    "cpu": "    local acc = 0\n    for k = 1, 200000 do acc = (acc + k * i) % 1000003 end\n    x.data[0] = acc\n",
    "wait": "    ffi.C.usleep(5000)\n    x.data[0] = i\n",
    "tiny": "    x.data[0] = i\n",
}
SWEEPS = {"cpu": [1, 2, 4, 8], "wait": [1, 2, 4, 8, 16, 32, 64], "tiny": [1, 2, 4, 8]}
PROGRESS = re.compile(r"^\[\s*([\d.]+)s\] .*? batch (\d+) ", re.M)
CHOSEN = re.compile(r"^pipeline .*? (\d+) workers? \(auto\)", re.M)
AUTO = re.compile(r"^auto +(.*)$", re.M)


def run(sluice, script, workers, seconds, window, cwd):
    """Steady samples/s over the last `window` seconds, and what auto printed."""
    proc = subprocess.Popen([sluice, "run", script, "--workers", str(workers), "--interval", "0.25"],
                            cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(seconds)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    if proc.returncode not in (0, 130):
        sys.exit("sluice run failed (%d):\n%s" % (proc.returncode, err))
    points = [(float(t), int(b)) for t, b in PROGRESS.findall(err)]
    if len(points) < 2:
        sys.exit("too few progress lines:\n" + err)
    t_end, b_end = points[-1]
    t_start, b_start = min(points, key=lambda p: abs(p[0] - (t_end - window)))
    rate = (b_end - b_start) * 8 / max(t_end - t_start, 1e-9)
    chosen = CHOSEN.search(out)
    auto = AUTO.search(out)
    return rate, (chosen.group(1) if chosen else ""), (auto.group(1) if auto else "")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sluice", default=os.path.join(here, "..", "..", "build", "tools", "sluice"))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=6.0)
    ap.add_argument("--window", type=float, default=3.0)
    ap.add_argument("--pipelines", default="cpu,wait,tiny")
    args = ap.parse_args()
    print("load average before: %.2f %.2f %.2f" % os.getloadavg())
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.pipelines.split(","):
            script = os.path.join(tmp, name + ".lua")
            with open(script, "w") as f:
                f.write(HEAD + MAPS[name] + TAIL)
            rates = {w: [] for w in SWEEPS[name] + ["auto"]}
            chosen = []
            for _ in range(args.runs):  # interleaved, so that load changes hit every setting alike
                for w in rates:
                    rate, n, how = run(args.sluice, script, w, args.seconds, args.window, tmp)
                    rates[w].append(rate)
                    if w == "auto":
                        chosen.append("%s (%s)" % (n, how))
            medians = {w: statistics.median(r) for w, r in rates.items()}
            best = max((w for w in medians if w != "auto"), key=lambda w: medians[w])
            ratio = medians["auto"] / medians[best]
            fixed = ", ".join("%s: %.0f" % (w, medians[w]) for w in SWEEPS[name])
            print("%-5s fixed workers, samples/s: %s" % (name, fixed))
            print("      auto: %.0f samples/s; best fixed %s: %.0f; ratio %.2f (target 0.9)"
                  % (medians["auto"], best, medians[best], ratio))
            for c in chosen:
                print("      auto chose " + c)
    print("load average after: %.2f %.2f %.2f" % os.getloadavg())


if __name__ == "__main__":
    main()
