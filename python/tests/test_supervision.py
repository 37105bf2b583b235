"""The process layer from Python: a signal handler that saves a checkpoint in
the middle of next(), a worker or a forked child that touches its parent's
Loader, a Loader made in a worker, and a dataset that refers to its Loader.
Each case that could hang runs in a child interpreter with a deadline."""
import gc
import json
import os
import subprocess
import sys
import time

import numpy as np
import pytest

import sluice


def run_child(code, timeout=60):
    """Runs code in a fresh interpreter; returns (exit status, stdout + stderr)."""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout)
    return proc.returncode, proc.stdout + proc.stderr


SIGNAL_CHECKPOINT = r"""
import json, os, signal, sys, threading, time
import sluice

class Slow:
    def __len__(self):
        return 400
    def __getitem__(self, i):
        time.sleep(0.02)
        return {"x": float(i)}

loader = sluice.Loader(dataset=Slow(), batch_size=4, workers=1, epochs=1)
saved = []
def checkpoint(signum, frame):
    saved.append(loader.state_dict())        # the preemption pattern: save, then leave
    raise SystemExit(0)
signal.signal(signal.SIGUSR1, checkpoint)
threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGUSR1)).start()
taken = 0
try:
    for batch in loader:
        taken += 1
finally:
    state = saved[0]["sluice_loader_state"] if saved else None
    print("STATE", json.dumps(state), "TAKEN", taken, flush=True)
"""


def test_a_signal_handler_that_saves_state_dict_mid_next_returns_in_time():
    start = time.monotonic()
    status, out = run_child(SIGNAL_CHECKPOINT, timeout=30)
    assert status == 0, out
    assert time.monotonic() - start < 20
    line = [l for l in out.splitlines() if l.startswith("STATE")][0]
    state = json.loads(line.split(" ", 1)[1].rsplit(" TAKEN", 1)[0])
    taken = int(line.rsplit(" ", 1)[1])
    assert state["batch"] == taken  # exactly the batches the loop got: a valid position to resume from
    assert 0 < taken < 100


class TouchesItsLoader:
    """A dataset whose __getitem__ asks its own Loader something (in a worker)."""

    def __init__(self):
        self.loader = None

    def __len__(self):
        return 16

    def __getitem__(self, i):
        if self.loader is None:  # the host's look at sample 0, before the Loader exists
            return np.array([0], dtype=np.int64)
        return np.array([self.loader.epoch], dtype=np.int64)


def test_a_worker_that_calls_its_loader_gets_a_clear_error_not_a_hang():
    code = r"""
import numpy as np, sluice, sys
sys.path.insert(0, %r)
from test_supervision import TouchesItsLoader
ds = TouchesItsLoader()
ds.loader = sluice.Loader(dataset=ds, batch_size=4, workers=2, batch_timeout_ms=20000)
try:
    for b in ds.loader:
        pass
    print("NO ERROR")
except sluice.Error as e:
    print("ERROR", e)
""" % os.path.dirname(__file__)
    status, out = run_child(code, timeout=60)
    assert status == 0, out
    assert "ERROR" in out and "is a fork of it" in out, out


class MakesALoader:
    """A dataset whose samples each run a whole inner Loader (in a worker)."""

    def __len__(self):
        return 6

    def __getitem__(self, i):
        inner = sluice.Loader(dataset=Squares(i + 3), batch_size=2, workers=1)
        total = sum(int(np.from_dlpack(b["x"]).sum()) for b in inner)
        inner.close()
        return {"total": np.int64(total)}


class Squares:
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return {"x": np.int64(i * i)}


def test_a_loader_made_inside_a_worker_runs():
    code = r"""
import numpy as np, sluice, sys
sys.path.insert(0, %r)
from test_supervision import MakesALoader
totals = []
for b in sluice.Loader(dataset=MakesALoader(), batch_size=3, workers=2):
    totals += list(np.from_dlpack(b["total"]))
print("TOTALS", totals)
""" % os.path.dirname(__file__)
    status, out = run_child(code, timeout=90)
    assert status == 0, out
    expected = [sum(k * k for k in range(i + 3)) for i in range(6)]
    assert "TOTALS %s" % expected in out, out


def test_a_forked_child_cannot_take_its_parents_batches_and_the_parent_goes_on():
    code = r"""
import os, numpy as np, sluice
class D:
    def __len__(self): return 64
    def __getitem__(self, i): return {"x": np.int64(i)}
loader = sluice.Loader(dataset=D(), batch_size=8, workers=2)
it = iter(loader)
first = next(it)
pid = os.fork()
if pid == 0:
    try:
        next(it)
        os._exit(3)
    except sluice.Error as e:
        os._exit(0 if "is a fork of it" in str(e) else 4)
_, status = os.waitpid(pid, 0)
seen = list(np.from_dlpack(first["x"])) + [int(v) for b in it for v in np.from_dlpack(b["x"])]
print("CHILD", os.waitstatus_to_exitcode(status), "SEEN", seen == list(range(64)),
      "RESTARTS", loader.stats()["worker_restarts"])
"""
    status, out = run_child(code, timeout=60)
    assert status == 0, out
    assert "CHILD 0 SEEN True RESTARTS 0" in out, out


class RefersToLoader:
    def __init__(self):
        self.loader = None

    def __len__(self):
        return 32

    def __getitem__(self, i):
        return {"x": np.float32(i)}


def test_a_dataset_that_refers_to_its_loader_is_collected_with_its_workers():
    ds = RefersToLoader()
    ds.loader = sluice.Loader(dataset=ds, batch_size=4, workers=2)
    next(iter(ds.loader))
    pids = ds.loader.worker_pids()
    assert all(os.path.exists("/proc/%d" % p) for p in pids)
    del ds
    gc.collect()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.05)
    assert not any(_alive(p) for p in pids)


def _alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
