#!/usr/bin/python3
"""PyTorch's DataLoader with pin_memory=True, on the sizes sluice_stage_bench uses.

    /usr/bin/python3 runtime/cuda/bench/torch_dataloader_bench.py [--batch-mb 8] [--batches 200]
        [--trainer-ms 2] [--workers 4]

Run it beside sluice_stage_bench with the same arguments: it measures the same
two things the same way.

1. H2D throughput: batches of batch-mb MiB of uint8 (16 samples each, made by
   workers that do nothing else) through DataLoader(pin_memory=True) and
   .cuda(non_blocking=True), with a consumer that does nothing else.
2. Trainer stall: a trainer step that keeps the GPU busy for trainer-ms
   (torch.cuda._sleep), fed by the same DataLoader. The stall of a step is the
   GPU idle time between the end of one step and the start of the next on the
   trainer's stream (CUDA events), as a % of trainer-ms.

Without torch or without a CUDA device it prints why and exits 0.
"""
import argparse
import sys
import time

SAMPLES_PER_BATCH = 16


def calibrate_sleep(torch, stream):
    """GPU clock cycles per millisecond of torch.cuda._sleep, measured."""
    cycles = 10_000_000
    with torch.cuda.stream(stream):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(cycles)  # warm up
        start.record(stream)
        torch.cuda._sleep(cycles)
        stop.record(stream)
        stop.synchronize()
    return cycles / start.elapsed_time(stop)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch-mb", type=float, default=8)
    p.add_argument("--batches", type=int, default=200)
    p.add_argument("--trainer-ms", type=float, default=2)
    p.add_argument("--workers", type=int, default=4)
    a = p.parse_args()

    try:
        import torch
        from torch.utils.data import DataLoader, Dataset
    except ImportError as e:
        print(f"torch_dataloader_bench: no torch ({e}); nothing to measure")
        return 0
    if not torch.cuda.is_available():
        print("torch_dataloader_bench: no CUDA device; nothing to measure")
        return 0

    sample_bytes = int(a.batch_mb * 1024 * 1024 / SAMPLES_PER_BATCH)

    class Untouched(Dataset):
        """Samples that cost nothing to make: the fastest possible pipeline."""

        def __init__(self, n):
            self.n = n

        def __len__(self):
            return self.n

        def __getitem__(self, i):
            return torch.empty(sample_bytes, dtype=torch.uint8)

    def loader(batches):
        return DataLoader(Untouched(batches * SAMPLES_PER_BATCH), batch_size=SAMPLES_PER_BATCH,
                          num_workers=a.workers, pin_memory=True, persistent_workers=False)

    warmup = 10
    stream = torch.cuda.Stream()

    # 1. Throughput.
    with torch.cuda.stream(stream):
        it = iter(loader(a.batches + warmup))
        for _ in range(warmup):
            next(it).cuda(non_blocking=True)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        total = 0
        for batch in it:
            x = batch.cuda(non_blocking=True)
            total += x.numel()
        torch.cuda.synchronize()
        gbps = total / (time.perf_counter() - t0) / 1e9

    # 2. Trainer stall.
    cycles_per_ms = calibrate_sleep(torch, stream)
    begin = [torch.cuda.Event(enable_timing=True) for _ in range(a.batches)]
    end = [torch.cuda.Event(enable_timing=True) for _ in range(a.batches)]
    with torch.cuda.stream(stream):
        it = iter(loader(a.batches + warmup))
        for _ in range(warmup):
            next(it).cuda(non_blocking=True)
            torch.cuda._sleep(int(cycles_per_ms * a.trainer_ms))
        t0 = time.perf_counter()
        waited = 0.0
        for k in range(a.batches):
            w0 = time.perf_counter()
            batch = next(it)
            waited += time.perf_counter() - w0
            x = batch.cuda(non_blocking=True)
            begin[k].record(stream)
            torch.cuda._sleep(int(cycles_per_ms * a.trainer_ms))  # the trainer's step on x
            end[k].record(stream)
        torch.cuda.synchronize()
        seconds = time.perf_counter() - t0
    gaps = [end[k - 1].elapsed_time(begin[k]) for k in range(1, a.batches)]
    step_ms = sum(begin[k].elapsed_time(end[k]) for k in range(a.batches)) / a.batches

    print(f"device           {torch.cuda.get_device_name(0)} (torch {torch.__version__})")
    print(f"batch            {SAMPLES_PER_BATCH * sample_bytes} bytes x {a.batches} batches, {a.workers} workers")
    print(f"h2d DataLoader   {gbps:.2f} GB/s (pin_memory=True, .cuda(non_blocking=True))")
    print(f"trainer step     {step_ms:.3f} ms (torch.cuda._sleep, asked {a.trainer_ms} ms)")
    print(f"trainer stall    {100 * sum(gaps) / len(gaps) / step_ms:.3f} % of the step per batch, "
          f"worst gap {max(gaps):.3f} ms")
    print(f"next() blocked   {1000 * waited:.3f} ms in total")
    print(f"samples/s        {a.batches * SAMPLES_PER_BATCH / seconds:.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
