"""What seeding the global generators per sample costs a Python dataset.

    build-python/venv/bin/python tools/bench/python/seed_cost.py [--runs 5]

Two measures, in one run:
  call    sluice._sluice._seed_globals(seed, epoch, index) in a loop, as a
          worker calls it before each sample: random, numpy.random and, when
          imported, torch (this script imports torch).
  loader  a map-style dataset whose __getitem__ returns a ready 64-float32
          array and an int (the cheapest sample there is), through one worker,
          batch 256: seconds per sample with seed_globals=True (the default)
          and with seed_globals=False (the baseline), alternated, medians of
          --runs. The difference is the seeding's cost per sample.
"""
import argparse
import statistics
import time

import numpy as np
import torch  # noqa: F401  (imported: the worker seeds its generator too)

import sluice
from sluice._sluice import _seed_globals


class Cheap:
    def __init__(self, n):
        self.n = n
        self.x = np.arange(64, dtype=np.float32)

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return {"x": self.x, "label": i}


def per_call(calls=200_000):
    start = time.perf_counter()
    for i in range(calls):
        _seed_globals(0, 0, i)
    return (time.perf_counter() - start) / calls


def per_sample(seed_globals, samples):
    loader = sluice.Loader(dataset=Cheap(samples), batch_size=256, workers=1, epochs=1, seed_globals=seed_globals)
    it = iter(loader)
    next(it)  # the worker started and its first batch made
    start = time.perf_counter()
    n = 256
    for batch in it:
        n += len(batch)
    seconds = time.perf_counter() - start
    loader.close()
    return seconds / (n - 256)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--samples", type=int, default=256 * 400)
    args = parser.parse_args()
    calls = [per_call() for _ in range(args.runs)]
    on, off = [], []
    for _ in range(args.runs):
        on.append(per_sample(True, args.samples))
        off.append(per_sample(False, args.samples))
    us = 1e6
    print("seed call:          %.2f us (median of %d; range %.2f-%.2f)"
          % (statistics.median(calls) * us, args.runs, min(calls) * us, max(calls) * us))
    print("sample, seeded:     %.2f us (range %.2f-%.2f)" % (statistics.median(on) * us, min(on) * us, max(on) * us))
    print("sample, not seeded: %.2f us (range %.2f-%.2f)" % (statistics.median(off) * us, min(off) * us, max(off) * us))
    print("seeding per sample: %.2f us" % ((statistics.median(on) - statistics.median(off)) * us))


if __name__ == "__main__":
    main()
