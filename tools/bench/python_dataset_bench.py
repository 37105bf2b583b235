"""Python datasets through Sluice against PyTorch's DataLoader and multiprocessing.Pool, in one run.

Run by hand (not in CI), with the package installed (tools/python-test.sh
makes build-python/venv):

    build-python/venv/bin/python tools/bench/python_dataset_bench.py [--runs 5] [--workers 2] [--json FILE]

Each run builds fresh loaders with fresh workers for every contender, back to
back; rates are medians of --runs runs, ratios medians of the per-run ratios.
The consumer is the same for all: a tensor (torch.from_dlpack for Sluice, as
given for the others) and one value read per 4 KiB page of every field.

  sequence  the classic experiment: a Keras-style sequence (sequence.__getitem__
            returns a whole batch) of 64 MiB float32 batches, 64 x 224 x 224 x 3,
            made by light compute (a scaled copy of a base image into a buffer the
            worker reuses: one pass over the batch, reading 64 MiB and writing 64
            MiB, before Sluice's copy into the slot). Sluice: Loader(sequence=seq). DataLoader: the same
            sequence, batch_size=None. Pool: multiprocessing.Pool (fork).imap over
            the batch indices, every batch pickled through a pipe. Also Sluice's
            zero-copy form, Loader(fill=...), where the same compute writes each
            image into the slot. Against single-thread memcpy of 64 MiB
            (numpy.copyto between pre-faulted buffers) in the same run. Targets:
            >= 25x DataLoader, >= 100x the Pool, >= 0.5x memcpy.
  sequence_memory  the same with no compute: the classic Sequence that slices
            batches out of arrays in memory (4 distinct batches, cycled); its
            batches are views, so the one copy is Sluice's into the slot.
  small     a map-style dataset of small samples (64 float32 and an int64 label),
            batches of 256: samples/s, Sluice (Loader(dataset=ds, batch_size=256))
            against DataLoader (batch_size=256, default collation), same workers.
            Target: >= 3x.
"""

import argparse
import json
import multiprocessing
import pathlib
import statistics
import sys
import time

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from pytorch_baseline import first_touch_us, touch_pages  # noqa: E402
from python_bench import memcpy_gb_per_s  # noqa: E402

TARGET_DATALOADER_RATIO = 25.0
TARGET_POOL_RATIO = 100.0
TARGET_MEMCPY_RATIO = 0.5
TARGET_SMALL_RATIO = 3.0
BATCH_SHAPE = (64, 224, 224, 3)
BATCH_BYTES = int(np.prod(BATCH_SHAPE)) * 4


class ImageSequence:
    """Keras-style: batch b is base * (1 + b / 1000), 64 MiB of float32, and labels."""

    def __init__(self, count):
        self.count = count
        self.base = np.random.default_rng(0).random(BATCH_SHAPE, dtype=np.float32)
        self.buffer = None  # each worker's own, made at its first batch and reused

    def __len__(self):
        return self.count

    def __getitem__(self, b):
        if self.buffer is None:
            self.buffer = np.empty(BATCH_SHAPE, np.float32)
        np.multiply(self.base, np.float32(1 + b / 1000), out=self.buffer)
        return self.buffer, np.arange(64, dtype=np.int64) + 64 * b


class MemorySequence:
    """Keras-style, in memory: batch b is rows [64 (b % 4), 64 (b % 4 + 1)) of x and y, as views."""

    def __init__(self, count):
        self.count = count
        self.x = np.random.default_rng(0).random((4 * BATCH_SHAPE[0],) + BATCH_SHAPE[1:], dtype=np.float32)
        self.y = np.arange(len(self.x), dtype=np.int64)

    def __len__(self):
        return self.count

    def __getitem__(self, b):
        rows = slice(64 * (b % 4), 64 * (b % 4 + 1))
        return self.x[rows], self.y[rows]


def fill_image(base):
    def fill(index, out):  # sample index = 64 * b + row
        np.multiply(base[index % 64], np.float32(1 + (index // 64) / 1000), out=out["x"])
        out["y"][...] = index
    return fill


class SmallSamples:
    def __init__(self, count):
        self.data = np.random.default_rng(1).random((count, 64), dtype=np.float32)

    def __len__(self):
        return len(self.data)

    def __getitem__(self, i):
        return self.data[i], i


def consume(torch, batch):
    """Both fields as tensors, one value read per page of each."""
    if hasattr(batch, "keys"):  # a dict, or a sluice.Batch
        batch = (batch["x"], batch["y"])
    total = 0
    for field in batch:
        t = field if torch.is_tensor(field) else torch.from_dlpack(field) if hasattr(field, "__dlpack__") \
            else torch.from_numpy(field)
        total += touch_pages(t)
    return total


# Warm-up of the 64 MiB cases: SEQUENCE_WARMUP batches and at least
# WARM_SECONDS, at most MAX_WARMUP batches. On this project's virtual machines
# the first ~30-64 batches of 64 MiB of every fresh loader arrive at 2-8 GB/s,
# however the memory was pre-faulted (python_bench.py's transport case, and
# tools/bench/README.md), then steady.
SEQUENCE_WARMUP = 64
WARM_SECONDS = 2.0
MAX_WARMUP = 100


def timed(torch, items, warmup, batches, warm_seconds=0.0):
    start = time.perf_counter()
    done = 0
    while done < warmup or (time.perf_counter() - start < warm_seconds and done < MAX_WARMUP):
        consume(torch, next(items))
        done += 1
    start = time.perf_counter()
    for _ in range(batches):
        consume(torch, next(items))
    return time.perf_counter() - start


def sluice_rate(torch, sluice, warmup, batches, warm_seconds=0.0, **loader):
    # The transport against DataLoader's: no per-sample seeding of the global
    # generators (DataLoader seeds once per worker); tools/bench/python/seed_cost.py
    # measures what that seeding adds.
    loader.setdefault("seed_globals", False)
    with sluice.Loader(**loader) as l:
        seconds = timed(torch, iter(l), warmup, batches, warm_seconds)
    return batches / seconds


def dataloader_rate(torch, dataset, warmup, batches, workers, batch_size=None, warm_seconds=0.0):
    loader = torch.utils.data.DataLoader(dataset, batch_size=batch_size, shuffle=False, num_workers=workers,
                                         prefetch_factor=2)
    items = iter(loader)
    seconds = timed(torch, items, warmup, batches, warm_seconds)
    del items
    return batches / seconds


_pool_sequence = None


def _pool_item(b):
    return _pool_sequence[b]


def pool_rate(torch, sequence, warmup, batches, workers):
    global _pool_sequence
    _pool_sequence = sequence  # inherited by the forked pool workers
    with multiprocessing.get_context("fork").Pool(workers) as pool:
        seconds = timed(torch, pool.imap(_pool_item, range(warmup + batches)), warmup, batches)
    return batches / seconds


def sequence_run(torch, sluice, workers, batches, in_memory):
    gb = BATCH_BYTES / 1e9
    seq = (MemorySequence if in_memory else ImageSequence)(MAX_WARMUP + batches + 16)
    memcpy = memcpy_gb_per_s(np)
    warmup = SEQUENCE_WARMUP
    ours = sluice_rate(torch, sluice, warmup, batches, WARM_SECONDS, sequence=seq, workers=workers) * gb
    theirs = dataloader_rate(torch, seq, 2, max(4, batches // 8), workers, warm_seconds=WARM_SECONDS) * gb
    pool = pool_rate(torch, seq, 1, 3, workers) * gb
    result = {"sluice_gb_per_s": ours, "dataloader_gb_per_s": theirs, "pool_gb_per_s": pool,
              "memcpy_gb_per_s": memcpy, "ratio_vs_dataloader": ours / theirs, "ratio_vs_pool": ours / pool,
              "ratio_vs_memcpy": ours / memcpy}
    if not in_memory:
        zero_copy = sluice_rate(torch, sluice, warmup, batches, WARM_SECONDS,
                                fill=fill_image(seq.base), size=64 * len(seq),
                                fields={"x": ("float32", BATCH_SHAPE[1:]), "y": ("int64", ())}, batch_size=64,
                                workers=workers) * gb
        result.update(sluice_fill_gb_per_s=zero_copy, fill_ratio_vs_memcpy=zero_copy / memcpy)
    return result


def small_run(torch, sluice, workers, batches):
    data = SmallSamples(256 * (2 * batches + 40))
    ours = sluice_rate(torch, sluice, 10, batches, dataset=data, batch_size=256, workers=workers) * 256
    theirs = dataloader_rate(torch, data, 10, batches, workers, batch_size=256) * 256
    return {"sluice_samples_per_s": ours, "dataloader_samples_per_s": theirs, "ratio": ours / theirs}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--batches", type=int, default=48, help="64 MiB batches per Sluice run (sequence)")
    parser.add_argument("--small-batches", type=int, default=200)
    parser.add_argument("--cases", default="sequence,sequence_memory,small")
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args()

    import torch
    import torch.utils.data

    import sluice

    torch.set_num_threads(1)
    results = {}
    for case in args.cases.split(","):
        runs = []
        for run in range(args.runs):
            if case in ("sequence", "sequence_memory"):
                runs.append(sequence_run(torch, sluice, args.workers, args.batches, case == "sequence_memory"))
            elif case == "small":
                runs.append(small_run(torch, sluice, args.workers, args.small_batches))
            else:
                raise SystemExit(f"unknown case {case}")
            print(f"{case} run {run + 1}: " + ", ".join(f"{k} {v:.3f}" for k, v in runs[-1].items()), flush=True)
        results[case] = {"runs": runs, "median": {k: statistics.median(r[k] for r in runs) for k in runs[0]}}

    print()
    verdicts = []
    for case in ("sequence", "sequence_memory"):
        if case not in results:
            continue
        m = results[case]["median"]
        fill = f" (fill {m['sluice_fill_gb_per_s']:.2f} GB/s, {m['fill_ratio_vs_memcpy']:.2f}x memcpy)" \
            if "sluice_fill_gb_per_s" in m else ""
        print(f"{case:16s} sluice {m['sluice_gb_per_s']:.2f} GB/s   DataLoader {m['dataloader_gb_per_s']:.3f} GB/s   "
              f"Pool {m['pool_gb_per_s']:.3f} GB/s   memcpy {m['memcpy_gb_per_s']:.2f} GB/s   ratios "
              f"{m['ratio_vs_dataloader']:.1f}x DataLoader, {m['ratio_vs_pool']:.0f}x Pool, "
              f"{m['ratio_vs_memcpy']:.2f}x memcpy{fill}  (medians of {args.runs})")
        for name, value, target in (("DataLoader", m["ratio_vs_dataloader"], TARGET_DATALOADER_RATIO),
                                    ("Pool", m["ratio_vs_pool"], TARGET_POOL_RATIO),
                                    ("memcpy", m["ratio_vs_memcpy"], TARGET_MEMCPY_RATIO)):
            verdicts.append(f"{case} target >= {target:g}x {name}: {'met' if value >= target else 'NOT met'}")
    if "small" in results:
        m = results["small"]["median"]
        print(f"{'small':16s} sluice {m['sluice_samples_per_s']:.0f} samples/s   DataLoader "
              f"{m['dataloader_samples_per_s']:.0f} samples/s   ratio {m['ratio']:.1f}x  (medians of {args.runs})")
        ok = m["ratio"] >= TARGET_SMALL_RATIO
        verdicts.append(f"small target >= {TARGET_SMALL_RATIO:.0f}x DataLoader: {'met' if ok else 'NOT met'}")
    for line in verdicts:
        print(line)
    touch = first_touch_us(np)
    print(f"first touch of a fresh 4 KiB page here: {touch:.2f} us (DataLoader's figures move with it)")
    results["first_touch_us"] = touch
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
