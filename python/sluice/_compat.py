"""torch.utils.data.DataLoader's keywords, where they mean what Sluice does.

    num_workers=n          workers=n (0: every sample made in this process, see _inline.py)
    worker_init_fn=f       worker_init=f: f(worker_id) once in each worker
    prefetch_factor=k      prefetch = k * workers + 2 batch slots (DataLoader's k batches
                           per worker, plus the one the loop holds and one being handed over;
                           k=2 is Sluice's default; the workers are num_workers=, else the
                           default, and a pipeline.lua that sets others is refused by Loader)
    timeout=s              batch_timeout_ms = 1000 s: a batch that takes longer has its worker
                           replaced and is made again (max_retries), then fails the run
    persistent_workers=b   True (Sluice's default): the workers live as long as the loader.
                           False, with a Python dataset: each epoch's loop forks its workers
                           afresh from this process as it is then, as DataLoader's iterators
                           do, so what the program changed in the dataset between epochs
                           reaches them (and worker_init runs again); one start per epoch.
                           No effect on a pipeline.lua, whose workers run Lua
    pin_memory=True        the arena every batch lives in is page-locked for CUDA when torch has a
                           CUDA device (one cudaHostRegister: _pinning.py); a warning where not
    collate_fn=None        the only value: samples are written straight into the batch's slot,
                           so there is no list of samples to collate (torch's default_collate
                           is accepted: Sluice stacks as it does)

In each worker, before worker_init, torch.utils.data.get_worker_info() gives what DataLoader's
would (id, num_workers, seed, dataset), so the usual worker_init_fn and datasets that shard by
worker work unchanged (worker_started).
"""
from ._sluice import OptionsError

_REFUSED = {
    "sampler": "Sluice plans each epoch itself (shuffle=, seed=, rank=, world_size=); a sampler is not taken",
    "batch_sampler": "Sluice plans each epoch itself (batch_size=, shuffle=, drop_last=); a batch_sampler is not taken",
    "generator": "the epoch's order comes from seed= (an int), not from a torch.Generator",
    "multiprocessing_context": "Sluice's workers are always forked (from a single-threaded zygote)",
}


def _is_default_collate(fn):
    try:
        from torch.utils.data import default_collate
    except ImportError:
        return False
    return fn is default_collate


def translate(keywords, worker_init):
    """(keywords in Sluice's names, worker_init, pin_memory, whether worker_init is DataLoader's
    worker_init_fn, persistent_workers) from DataLoader's names; sluice.OptionsError for one it
    cannot honour."""
    out = dict(keywords)
    for name, why in _REFUSED.items():
        if out.pop(name, None) is not None:
            raise OptionsError("%s=: %s" % (name, why))
    if "num_workers" in out:
        if "workers" in out:
            raise OptionsError("num_workers= and workers= are the same setting: give one")
        out["workers"] = out.pop("num_workers")
    init_fn = False
    if "worker_init_fn" in out:
        fn = out.pop("worker_init_fn")
        if worker_init is not None and fn is not None:
            raise OptionsError("worker_init_fn= and worker_init= are the same setting: give one")
        init_fn = fn is not None
        worker_init = fn if fn is not None else worker_init
    collate = out.pop("collate_fn", None)
    if collate is not None and not _is_default_collate(collate):
        raise OptionsError("collate_fn=: Sluice writes each sample straight into its row of the batch in shared memory, "
                    "so there is no list of samples to collate. Return what the batch should hold from "
                    "__getitem__ (dicts and tuples nest, each leaf a field), and do per-batch work in the loop")
    persistent = out.pop("persistent_workers", True)
    if not isinstance(persistent, bool):
        raise OptionsError("persistent_workers= is True or False, got %r" % (persistent,))
    pin = bool(out.pop("pin_memory", False))
    device = out.pop("pin_memory_device", "")
    if pin and device and not str(device).startswith("cuda"):
        raise OptionsError("pin_memory_device=%r: Sluice pins for CUDA only" % (device,))
    timeout = out.pop("timeout", None)
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout < 0):
        raise OptionsError("timeout= is seconds, 0 or more (0: none, as DataLoader's), got %r" % (timeout,))
    if timeout:
        if "batch_timeout_ms" in out:
            raise OptionsError("timeout= and batch_timeout_ms= are the same setting: give one")
        out["batch_timeout_ms"] = int(round(float(timeout) * 1000))
    factor = out.pop("prefetch_factor", None)
    if factor is not None and (isinstance(factor, bool) or not isinstance(factor, int) or factor < 1):
        raise OptionsError("prefetch_factor= is the batches each worker keeps ready, an int of 1 or more, got %r" % (factor,))
    if factor is not None:
        if "prefetch" in out:
            raise OptionsError("prefetch_factor= and prefetch= say the same: give one")
        workers = out.get("workers", 2)
        if not isinstance(workers, int) or workers < 1:
            raise OptionsError("prefetch_factor= needs a number of workers (num_workers= or workers=) of 1 or more; "
                        "or give prefetch= (batch slots in all)")
        out["prefetch"] = int(factor) * workers + 2
    return out, worker_init, pin, init_fn, persistent


def worker_started(worker_init, dataset, seed, workers):
    """What each worker calls first, worker_id its only argument: torch's
    worker info set as DataLoader's workers have it (torch imported, a
    forked copy of this process's torch), then the user's worker_init.
    workers: the worker count (auto: the usable cores it starts with; it
    may add workers, whose ids are past that);
    seed: seed + worker_id, a worker's own (its samples' generators are
    keyed by sample, not by worker)."""
    import os
    import sys
    if isinstance(workers, str) and workers.isdigit():
        workers = int(workers)
    if not isinstance(workers, int):  # "auto": starts with the usable cores
        workers = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)

    def started(worker_id):
        torch_worker = sys.modules.get("torch.utils.data._utils.worker")
        if torch_worker is not None and hasattr(torch_worker, "WorkerInfo"):
            torch_worker._worker_info = torch_worker.WorkerInfo(
                id=worker_id, num_workers=workers, seed=seed + worker_id, dataset=dataset)
        if worker_init is not None:
            worker_init(worker_id)
    return started
