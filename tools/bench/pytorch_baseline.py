"""PyTorch DataLoader baselines for `sluice bench`.

The same work as the Sluice side of each case, through torch.utils.data.DataLoader
with num_workers worker processes:

  transport  each item is one 64 MiB float32 tensor filled with a value
             (batch_size=None: the dataset makes whole batches); the consumer reads
             one value per 4 KiB page.
  handoff    each item is one 256 x 256 uint8 batch whose samples start with their
             int64 sample id; the consumer reads one value per 4 KiB page.

Each run builds a fresh DataLoader iterator (fresh workers), skips --warmup
batches, then times --batches batches while the workers keep prefetching.

Output protocol, read by tools/bench/pytorch_baseline.cpp: one line "RUN <rate>"
per run (GB/s for transport, batches/s for handoff), or a single "SKIP <reason>"
line and exit status 0 when torch cannot be imported. Anything else is diagnostics.
"""

import argparse
import sys
import time

TRANSPORT_BYTES = 64 << 20
HANDOFF_SAMPLES = 256
HANDOFF_SAMPLE_BYTES = 256
PAGE_BYTES = 4096


def transport_dataset(torch, count):
    elements = TRANSPORT_BYTES // 4

    class TransportBatches(torch.utils.data.Dataset):
        def __len__(self):
            return count

        def __getitem__(self, i):
            return torch.full((elements,), float(i), dtype=torch.float32)

    return TransportBatches()


def handoff_dataset(torch, count):
    class HandoffBatches(torch.utils.data.Dataset):
        def __len__(self):
            return count

        def __getitem__(self, i):
            batch = torch.empty((HANDOFF_SAMPLES, HANDOFF_SAMPLE_BYTES), dtype=torch.uint8)
            first = i * HANDOFF_SAMPLES
            batch.view(torch.int64)[:, 0] = torch.arange(first, first + HANDOFF_SAMPLES)
            return batch

    return HandoffBatches()


def touch_pages(tensor):
    """Reads one byte per 4 KiB page, as the Sluice consumer does (summed as
    integers: float bytes may spell inf or NaN)."""
    import torch  # loaded already: the caller made the tensor
    flat = tensor.view(-1).view(torch.uint8)
    return int(flat[::PAGE_BYTES].sum())


def first_touch_us(numpy, nbytes=64 << 20):
    """The cost of the first touch of a fresh 4 KiB page on this machine, in
    microseconds (median of 3): what DataLoader's transport is bound by, so
    every ratio against it is printed with it (it moves 3-20 us between VMs)."""
    import statistics
    import time
    costs = []
    for _ in range(3):
        fresh = numpy.zeros(nbytes, dtype=numpy.uint8)  # calloc: fresh, untouched pages
        start = time.perf_counter()
        fresh[::PAGE_BYTES] = 1
        costs.append((time.perf_counter() - start) / (nbytes // PAGE_BYTES) * 1e6)
        del fresh
    return statistics.median(costs)


def measure(torch, mode, workers, warmup, batches):
    """One run: the case's rate over `batches` batches after `warmup` batches."""
    make = transport_dataset if mode == "transport" else handoff_dataset
    prefetch = 2 * workers  # DataLoader's default prefetch_factor is 2 per worker
    # Batches beyond those consumed keep the workers busy until the clock stops,
    # as on the Sluice side.
    loader = torch.utils.data.DataLoader(
        make(torch, warmup + batches + prefetch), batch_size=None, shuffle=False,
        num_workers=workers, prefetch_factor=2)
    items = iter(loader)
    checksum = 0
    for _ in range(warmup):
        checksum += touch_pages(next(items))
    start = time.perf_counter()
    for _ in range(batches):
        checksum += touch_pages(next(items))
    seconds = time.perf_counter() - start
    del items  # shuts the workers down before the next run starts its own
    if mode == "transport":
        return batches * TRANSPORT_BYTES / seconds / 1e9
    return batches / seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=["transport", "handoff"])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--warmup", type=int, default=4)
    parser.add_argument("--batches", type=int, default=32)
    args = parser.parse_args()

    try:
        import torch
        import torch.utils.data
    except Exception as error:  # any import failure means "no PyTorch here"
        print(f"SKIP torch cannot be imported by {sys.executable}: {error}", flush=True)
        return 0

    torch.set_num_threads(1)  # the consumer's own work is one small reduction
    for _ in range(args.runs):
        rate = measure(torch, args.mode, args.workers, args.warmup, args.batches)
        print(f"RUN {rate!r}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
