"""Python datasets: worker crashes and hangs, and forking a process that runs threads (torch)."""
import gc
import os
import threading
import time

import numpy as np
import pytest
import torch

import sluice
from datasets import Batches, Collecting, CrashAlways, CrashOnce, Counting, counting_ok


def contents(loader):
    return [(b.index, np.from_dlpack(b["x"]).tobytes()) for b in loader]


def alive(pid):
    try:
        with open("/proc/%d/status" % pid) as status:
            return "State:\tZ" not in status.read()
    except FileNotFoundError:
        return False


@pytest.mark.parametrize("how", ["exit", "hang"])
def test_a_worker_that_dies_or_hangs_is_replaced_and_its_batches_made_again(tmp_path, how):
    options = dict(batch_size=4, shuffle=True, seed=9, epochs=1, workers=2, batch_timeout_ms=1000)
    clean = contents(sluice.Loader(dataset=Counting(40), **options))
    loader = sluice.Loader(dataset=CrashOnce(17, tmp_path / "crashed", how), **options)
    assert contents(loader) == clean
    assert (tmp_path / "crashed").exists()
    stats = loader.stats()
    # At least the one: on a loaded machine the watchdog may also replace a worker that was slow.
    assert stats["worker_restarts"] >= 1 and stats["batches_retried"] >= 1


def test_a_sample_that_always_kills_its_worker_is_skipped_with_the_reason():
    loader = sluice.Loader(dataset=CrashAlways(40), batch_size=4, epochs=1, workers=2, max_retries=2,
                           on_error="skip")
    assert sorted(int(i) for b in loader for i in b.sample_ids) == [i for i in range(40) if i != 5]
    stats = loader.stats()
    assert stats["skipped_samples"] == [5]
    assert "failed 2 times in a row" in stats["skip_reasons"][0]
    assert "exited with status 3" in stats["skip_reasons"][0]


def test_no_worker_outlives_a_failed_loader():
    loader = sluice.Loader(dataset=CrashAlways(40), batch_size=4, epochs=1, workers=2, max_retries=2)
    with pytest.raises(sluice.Error, match="sample 5 .* failed 2 times in a row"):
        list(loader)
    pids = loader.worker_pids()
    loader.close()
    deadline = time.monotonic() + 5
    while any(alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not any(alive(pid) for pid in pids)


def test_fork_after_torch_ran_its_thread_pool_and_while_a_python_thread_runs():
    torch.set_num_threads(4)
    a = torch.randn(256, 256)
    product = a @ a  # torch's intra-op pool has run
    stop = threading.Event()
    ticks = []

    def busy():  # a Python thread alive (and wanting the GIL) while the workers are forked
        while not stop.is_set():
            ticks.append(sum(range(100)))

    thread = threading.Thread(target=busy)
    thread.start()
    try:
        loader = sluice.Loader(dataset=Counting(), batch_size=10, epochs=1, workers=2,
                               worker_init=lambda worker: torch.set_num_threads(1))
        count = 0
        for batch in loader:
            assert counting_ok(np.from_dlpack(batch["x"]), np.from_dlpack(batch["id"]))
            count += 1
        pids = loader.worker_pids()
        threads = []
        for pid in pids:
            with open("/proc/%d/status" % pid) as status:
                threads += [int(line.split()[1]) for line in status if line.startswith("Threads:")]
    finally:
        stop.set()
        thread.join()
    assert threads == [1, 1]  # the host's threads, torch's and Python's, are not in the workers
    assert count == 10
    assert ticks and torch.allclose(a @ a, product)  # torch still works here


def test_torch_in_a_worker_runs_one_thread_without_being_told():
    class Tensors(Counting):
        def __getitem__(self, i):
            m = torch.randn(128, 128)  # a matmul: torch's intra-op pool, which a fork does not copy
            assert (m @ m).shape == (128, 128)
            assert torch.get_num_threads() == (4 if os.getpid() == host else 1)  # sample 0 is tried here too
            return {"x": (torch.arange(4, dtype=torch.float32) + 10.0 * i).numpy(), "id": i}

    host = os.getpid()
    torch.set_num_threads(4)
    (torch.randn(256, 256) @ torch.randn(256, 256)).sum()  # the host's pool has run
    loader = sluice.Loader(dataset=Tensors(), batch_size=10, epochs=1, workers=2, batch_timeout_ms=10000,
                           max_retries=1)
    for batch in loader:
        assert counting_ok(np.from_dlpack(batch["x"]), np.from_dlpack(batch["id"]))
    assert torch.get_num_threads() == 4  # the host's setting is its own


def test_worker_init_that_raises_fails_the_run_with_its_traceback():
    def init(worker):
        raise RuntimeError("no GPU for worker %d" % worker)
    with pytest.raises(sluice.Error, match=r"worker_init\(\d\) raised RuntimeError: no GPU for worker"):
        list(sluice.Loader(dataset=Counting(), batch_size=10, epochs=1, worker_init=init))


def test_what_a_worker_prints_is_flushed(capfd):
    class Loud(Counting):
        def __getitem__(self, i):
            if i == 3:
                print("making sample 3")
            return super().__getitem__(i)
    for _ in sluice.Loader(dataset=Loud(), batch_size=10, epochs=1, workers=2):
        pass
    assert capfd.readouterr().out.count("making sample 3") == 1


def test_a_loader_started_on_another_thread():
    results = []

    def run():
        try:
            loader = sluice.Loader(dataset=Counting(), batch_size=10, epochs=1, workers=2)
            ok = all(counting_ok(np.from_dlpack(b["x"]), np.from_dlpack(b["id"])) for b in loader)
            results.append((ok, loader.stats()["samples_delivered"]))
        except Exception as error:  # reported below, on the test's thread
            results.append(error)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(60)
    assert results == [(True, 100)]


def test_a_worker_that_frees_the_hosts_garbage_tensors_leaves_their_loader_alone():
    # A tensor of another loader's batch, in a reference cycle: garbage that
    # only the collector frees, and the workers inherit it. Freeing it there
    # must not release the host's slot (its arena is not mapped in a worker).
    first = sluice.Loader(dataset=Counting(40), batch_size=4, workers=1)
    batches = iter(first)
    gc.disable()
    try:
        held = torch.from_dlpack(next(batches)["x"])
        cycle = [torch.from_dlpack(next(batches)["x"])]
        cycle.append(cycle)
        del cycle
        loader = sluice.Loader(dataset=Collecting(40), batch_size=4, workers=2)
        ids = []
        for b in loader:
            assert counting_ok(np.from_dlpack(b["x"]), np.from_dlpack(b["id"]))
            ids += np.from_dlpack(b["id"]).tolist()
    finally:
        gc.enable()
    assert loader.stats()["worker_restarts"] == 0
    assert ids == list(range(40))
    gc.collect()  # here, the cycle's slot goes back to `first`
    assert counting_ok(held.numpy(), np.arange(4))
    assert sum(1 for _ in batches) == 8  # the rest of first's epoch, as if nothing happened


def _square(x):
    return x * x


class PoolUser:
    """A fork multiprocessing Pool in __getitem__: its exit terminates the
    Pool's processes with SIGTERM, which they must not shrug off as a
    Sluice worker does."""

    def __len__(self):
        return 8

    def __getitem__(self, i):
        import multiprocessing
        with multiprocessing.get_context("fork").Pool(2) as pool:
            pids = pool.map(_pid_of, range(4))
            return {"v": sum(pool.map(_square, [i, i + 1])), "pool": max(pids)}


def _pid_of(_):
    return os.getpid()


def test_a_pool_forked_in_a_worker_is_stopped_by_its_terminate():
    # A hang here fails the run at batch_timeout_ms (one retry), not the test's clock.
    loader = sluice.Loader(dataset=PoolUser(), batch_size=4, workers=2, batch_timeout_ms=10000, max_retries=1,
                           format="numpy")
    batches = list(loader)
    assert [b["v"].tolist() for b in batches] == [[1, 5, 13, 25], [41, 61, 85, 113]]
    pool_pids = [int(p) for b in batches for p in b["pool"]]
    loader.close()
    deadline = time.monotonic() + 5
    while any(alive(pid) for pid in pool_pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [pid for pid in pool_pids if alive(pid)], "a Pool's process outlived its terminate()"
