"""Sluice's Python package against PyTorch's DataLoader and memcpy, in one run.

Run by hand (not in CI), with the package installed (tools/python-test.sh
makes build-python/venv):

    build-python/venv/bin/python tools/bench/python_bench.py [--runs 5] [--workers 2] [--json FILE]

Cases (each run builds a fresh loader with fresh workers; rates are medians of
--runs runs, and ratios are medians of the per-run ratios of the two sides
measured back to back in the same run):

  handoff            one 256 x 256 uint8 batch per step (first 8 bytes: the sample id,
                     as tools/bench/handoff.cpp); the consumer makes a tensor with
                     torch.from_dlpack and reads one value per 4 KiB page.
                     DataLoader: tools/bench/pytorch_baseline.py's handoff dataset
                     (batch_size=None), the same consumer. Target: >= 35,000
                     batches/s and >= 40x DataLoader. Also the consumer alone on
                     one batch held in memory (no loader): the ceiling of any
                     loader's rate, and of any ratio, on this machine.
  handoff_quickstart batches shaped like examples/quickstart.lua's (image
                     float32[64,3,32,32], label int64[64]); both fields through
                     torch.from_dlpack, every page of both read. DataLoader: a
                     dataset of the same dicts of tensors.
  format             what a batch costs the consumer once it is ready (the workers
                     have filled every slot: the loop sleeps 20 ms, then takes 48
                     batches of handoff.lua), per batch: next() alone; next() and
                     torch.from_dlpack of the field; and format="torch", which
                     yields the tensor. Target: format="torch" within 2 us a batch
                     of next() with a bare torch.from_dlpack.
  transport          64 MiB float32 batches, every byte written by a worker; the
                     consumer makes a tensor and reads one value per 4 KiB page
                     (as tools/bench/transport.cpp). GB/s against single-thread
                     memcpy of 64 MiB (numpy.copyto between pre-faulted buffers),
                     measured in the same run. Target: >= 0.8x memcpy. DataLoader:
                     pytorch_baseline.py's transport dataset, for reference.

The Sluice pipelines are tools/bench/python/*.lua. Their samples are whole
batches (batch_size 1, or 64 samples of 1 MiB for transport) so that the
handoff, not Lua's per-sample work, is what is measured, as batch_size=None
does on the DataLoader side.
"""

import argparse
import json
import pathlib
import statistics
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import pytorch_baseline  # noqa: E402  (the DataLoader datasets and touch_pages of `sluice bench`)

TARGET_HANDOFF_RATE = 35_000
TARGET_HANDOFF_RATIO = 40.0
TARGET_TRANSPORT_RATIO = 0.8


# The transport case warms up for TRANSPORT_WARMUP batches and at least
# WARM_SECONDS: on this project's virtual machines the first ~64 batches of 64
# MiB of every fresh loader arrive at ~2 GB/s, however the arena was
# pre-faulted (the hypervisor's doing: the same in a plain C program writing a
# fresh shared mapping), then 30-40 GB/s. tools/bench/README.md has the figures.
TRANSPORT_WARMUP = 96
WARM_SECONDS = 2.0


def timed(torch, items, consume, warmup, batches, warm_seconds=0.0):
    """Seconds that `batches` batches of `items` take through consume, after at
    least `warmup` of them and `warm_seconds`."""
    checksum = 0
    start = time.perf_counter()
    done = 0
    while done < warmup or time.perf_counter() - start < warm_seconds:
        checksum += consume(torch, next(items))
        done += 1
    start = time.perf_counter()
    for _ in range(batches):
        checksum += consume(torch, next(items))
    return time.perf_counter() - start


def sluice_rate(sluice, torch, script, consume, warmup, batches, workers, prefetch, warm_seconds=0.0):
    """Batches per second through sluice.Loader into consume(batch), and the consumer's wait."""
    with sluice.Loader(HERE / "python" / script, workers=workers, prefetch=prefetch) as loader:
        seconds = timed(torch, iter(loader), consume, warmup, batches, warm_seconds)
        wait = loader.stats()["consumer_wait_ns"] / 1e9
    return batches / seconds, wait


def consumer_alone_rate(torch, consume, batches):
    """Batches per second of the consumer's own work on one batch held in
    memory, with no loader at all: the rate a loader that cost nothing would
    give, so ours / this is the loader's share and this / DataLoader's the
    ceiling of any ratio on this machine (torch's per-call overhead, not the
    loader, bounds it)."""
    batch = {"x": torch.zeros(256, 256, dtype=torch.uint8)}
    return batches / timed(torch, iter(lambda: batch, None), consume, 1000, batches)


def ready_batch_us(sluice, torch, fmt, take, workers, chunks=200, per_chunk=48):
    """Microseconds the consumer spends per batch on batches already made:
    before each chunk of per_chunk batches the loop sleeps while the workers
    fill the free slots (64 of them), so next() never waits for a worker."""
    with sluice.Loader(HERE / "python" / "handoff.lua", workers=workers, prefetch=64, format=fmt) as loader:
        items = iter(loader)
        for _ in range(1000):
            take(torch, next(items))
        total = 0.0
        for _ in range(chunks):
            time.sleep(0.02)
            start = time.perf_counter()
            for _ in range(per_chunk):
                take(torch, next(items))
            total += time.perf_counter() - start
    return total / (chunks * per_chunk) * 1e6


def dataloader_rate(torch, dataset, consume, warmup, batches, workers):
    """Batches per second through torch.utils.data.DataLoader (batch_size=None), as pytorch_baseline.py."""
    loader = torch.utils.data.DataLoader(dataset, batch_size=None, shuffle=False, num_workers=workers,
                                         prefetch_factor=2)
    items = iter(loader)
    seconds = timed(torch, items, consume, warmup, batches)
    del items  # shuts the workers down before the next run starts its own
    return batches / seconds


# --- What the consumer does with a batch: the same on both sides -------------

def consume_x(torch, batch):
    """handoff and transport: field x (a tensor as it is, from DataLoader)."""
    x = batch if torch.is_tensor(batch) else torch.from_dlpack(batch["x"])
    return pytorch_baseline.touch_pages(x)


def consume_quickstart(torch, batch):
    if isinstance(batch, dict):
        image, label = batch["image"], batch["label"]
    else:
        image, label = torch.from_dlpack(batch["image"]), torch.from_dlpack(batch["label"])
    return pytorch_baseline.touch_pages(image) + pytorch_baseline.touch_pages(label)


def quickstart_dataset(torch, count):
    class QuickstartBatches(torch.utils.data.Dataset):
        def __len__(self):
            return count

        def __getitem__(self, i):
            label = torch.arange(64 * i, 64 * i + 64, dtype=torch.int64) % 10
            image = torch.empty((64, 3, 32, 32), dtype=torch.float32)
            image[:, 0, 0, 0] = label.float() / 10
            return {"image": image, "label": label}

    return QuickstartBatches()


def memcpy_gb_per_s(numpy, nbytes=64 << 20, copies=5):
    """Single-thread memcpy between pre-faulted buffers, median of `copies` (memcpy_baseline.cpp)."""
    source = numpy.full(nbytes, 1, dtype=numpy.uint8)
    target = numpy.full(nbytes, 2, dtype=numpy.uint8)
    numpy.copyto(target, source)
    rates = []
    for _ in range(copies):
        start = time.perf_counter()
        numpy.copyto(target, source)
        rates.append(nbytes / (time.perf_counter() - start) / 1e9)
    return statistics.median(rates)


def check_handoff(sluice, torch):
    """The handoff batches carry their sample ids, as produced (outside the timing)."""
    with sluice.Loader(HERE / "python" / "handoff.lua", workers=2) as loader:
        it = iter(loader)
        for _ in range(100):
            batch = next(it)
            first = int(torch.from_dlpack(batch["x"]).view(-1)[:8].view(torch.int64)[0])
            if first != int(batch.sample_ids[0]):
                raise SystemExit(f"handoff batch {batch.index} holds id {first}, not {batch.sample_ids[0]}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--cases", default="handoff,handoff_quickstart,format,transport")
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args()

    import numpy
    import torch
    import torch.utils.data

    import sluice

    torch.set_num_threads(1)  # the consumer's own work is one small reduction per batch
    check_handoff(sluice, torch)
    results = {}
    cases = args.cases.split(",")
    w = args.workers
    for case in cases:
        runs = []
        for run in range(args.runs):
            if case == "handoff":
                ours, wait = sluice_rate(sluice, torch, "handoff.lua", consume_x, 1000, 20000, w, 64)
                theirs = dataloader_rate(torch, pytorch_baseline.handoff_dataset(torch, 1100), consume_x,
                                         50, 1000, w)
                alone = consumer_alone_rate(torch, consume_x, 20000)
                runs.append({"sluice_batches_per_s": ours, "dataloader_batches_per_s": theirs,
                             "ratio": ours / theirs, "consumer_wait_s": wait,
                             "consumer_alone_batches_per_s": alone, "ceiling_ratio": alone / theirs})
            elif case == "handoff_quickstart":
                ours, wait = sluice_rate(sluice, torch, "quickstart_sized.lua", consume_quickstart, 500, 10000, w, 64)
                theirs = dataloader_rate(torch, quickstart_dataset(torch, 1100), consume_quickstart, 50, 1000, w)
                runs.append({"sluice_batches_per_s": ours, "dataloader_batches_per_s": theirs,
                             "ratio": ours / theirs, "consumer_wait_s": wait})
            elif case == "format":
                alone = ready_batch_us(sluice, torch, "dlpack", lambda t, b: b["x"], w)
                bare = ready_batch_us(sluice, torch, "dlpack", lambda t, b: t.from_dlpack(b["x"]), w)
                tensor = ready_batch_us(sluice, torch, "torch", lambda t, b: b["x"], w)
                runs.append({"next_us": alone, "next_from_dlpack_us": bare, "format_torch_us": tensor,
                             "format_torch_extra_us": tensor - bare})
            elif case == "transport":
                memcpy = memcpy_gb_per_s(numpy)
                ours, wait = sluice_rate(sluice, torch, "transport.lua", consume_x, TRANSPORT_WARMUP, 64, w,
                                         2 * w + 2, WARM_SECONDS)
                ours *= 64 * 2**20 / 1e9
                theirs = dataloader_rate(torch, pytorch_baseline.transport_dataset(torch, 16), consume_x,
                                         2, 8, w) * 64 * 2**20 / 1e9
                runs.append({"sluice_gb_per_s": ours, "memcpy_gb_per_s": memcpy, "ratio_vs_memcpy": ours / memcpy,
                             "dataloader_gb_per_s": theirs, "consumer_wait_s": wait})
            else:
                raise SystemExit(f"unknown case {case}")
            print(f"{case} run {run + 1}: " + ", ".join(f"{k} {v:.3f}" for k, v in runs[-1].items()), flush=True)
        results[case] = {"runs": runs, "median": {k: statistics.median(r[k] for r in runs) for k in runs[0]}}

    print()
    verdicts = []
    for case, result in results.items():
        m = result["median"]
        if case.startswith("handoff"):
            print(f"{case:19s} sluice {m['sluice_batches_per_s']:9.0f} batches/s   DataLoader "
                  f"{m['dataloader_batches_per_s']:7.0f} batches/s   ratio {m['ratio']:6.1f}x  (medians of {args.runs})")
            if case == "handoff":
                print(f"{'':19s} the consumer alone (no loader) {m['consumer_alone_batches_per_s']:9.0f} batches/s: "
                      f"no loader can be more than {m['ceiling_ratio']:.1f}x DataLoader here; Sluice gives "
                      f"{m['sluice_batches_per_s'] / m['consumer_alone_batches_per_s']:.2f} of that rate")
                ok = m["sluice_batches_per_s"] >= TARGET_HANDOFF_RATE and m["ratio"] >= TARGET_HANDOFF_RATIO
                verdicts.append(f"handoff target >= {TARGET_HANDOFF_RATE} batches/s and >= {TARGET_HANDOFF_RATIO:.0f}x "
                                f"DataLoader: {'met' if ok else 'NOT met'}")
        elif case == "format":
            print(f"{case:19s} per ready batch: next() {m['next_us']:.2f} us, next() + torch.from_dlpack "
                  f"{m['next_from_dlpack_us']:.2f} us, format=\"torch\" {m['format_torch_us']:.2f} us "
                  f"(medians of {args.runs})")
            ok = m["format_torch_extra_us"] <= 2.0
            verdicts.append(f"format=\"torch\" within 2 us a batch of a bare torch.from_dlpack "
                            f"({m['format_torch_extra_us']:+.2f} us): {'met' if ok else 'NOT met'}")
        else:
            print(f"{case:19s} sluice {m['sluice_gb_per_s']:6.2f} GB/s   memcpy {m['memcpy_gb_per_s']:6.2f} GB/s   "
                  f"ratio {m['ratio_vs_memcpy']:.2f}x   DataLoader {m['dataloader_gb_per_s']:.2f} GB/s")
            ok = m["ratio_vs_memcpy"] >= TARGET_TRANSPORT_RATIO
            verdicts.append(f"transport target >= {TARGET_TRANSPORT_RATIO}x memcpy: {'met' if ok else 'NOT met'}")
    for line in verdicts:
        print(line)
    touch = pytorch_baseline.first_touch_us(numpy)
    print(f"first touch of a fresh 4 KiB page here: {touch:.2f} us (DataLoader's figures move with it)")
    results["first_touch_us"] = touch
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
