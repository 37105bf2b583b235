"""Ctrl-C in a training loop: KeyboardInterrupt at once, no worker left behind."""
import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import pipeline

CHILD = r"""
import sys, time, sluice

class Slow:  # a Python dataset as slow as slow.lua: 0.05 s a sample, batches of 8
    def __len__(self):
        return 1000
    def __getitem__(self, i):
        time.sleep(0.05)
        return {"x": float(i)}

if sys.argv[1] == "dataset":
    loader = sluice.Loader(dataset=Slow(), batch_size=8, workers=2)
else:
    loader = sluice.Loader(sys.argv[1], workers=2)
batches = iter(loader)
next(batches)
print("READY", flush=True)
try:
    for batch in batches:   # each batch takes ~0.4 s to make: the loop is waiting in next()
        pass
except KeyboardInterrupt:
    print("INTERRUPTED", loader.state_dict()["sluice_loader_state"]["batch"], flush=True)
    raise
"""


def descendants(pid):
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def terminal_child(code, *args):
    """python -c code args, in a session of its own, with SIGINT as a
    terminal's program has it: a job started with '&' by a non-interactive
    shell (a CI script) inherits it ignored, and Python then never raises
    KeyboardInterrupt."""
    return subprocess.Popen([sys.executable, "-c", code, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


@pytest.mark.parametrize("source", ["lua", "dataset"])
@pytest.mark.parametrize("to_group", [False, True], ids=["kill-pid", "kill-process-group"])
def test_ctrl_c_raises_keyboard_interrupt_and_leaves_no_worker(to_group, source):
    child = terminal_child(CHILD, pipeline("slow.lua") if source == "lua" else "dataset")
    try:
        assert child.stdout.readline().strip() == "READY"
        time.sleep(0.3)
        family = descendants(child.pid)
        assert len(family) >= 3  # the zygote and two workers
        sent = time.monotonic()
        if to_group:
            os.killpg(child.pid, signal.SIGINT)  # what a terminal's Ctrl-C does
        else:
            os.kill(child.pid, signal.SIGINT)
        out, err = child.communicate(timeout=10)
        took = time.monotonic() - sent
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert "INTERRUPTED" in out and "KeyboardInterrupt" in err, err
    assert child.returncode in (-signal.SIGINT, 128 + signal.SIGINT, 1)
    assert took < 2.0, f"exit took {took:.2f} s"
    deadline = time.monotonic() + 3
    while any(alive(pid) for pid in family) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not [pid for pid in family if alive(pid)], "worker processes outlived the program"


STARTING = r"""
import time, torch, sluice

class Slow:
    def __len__(self):
        return 100000
    def __getitem__(self, i):
        time.sleep(0.002)
        return {"x": float(i)}

loader = sluice.Loader(dataset=Slow(), batch_size=16, workers=2, format="torch")
print("READY", flush=True)
for batch in loader:  # the Ctrl-C comes as the workers are forked
    pass
"""


def test_ctrl_c_while_the_workers_are_forked_is_not_lost():
    # The fork hooks (logging's) run Python code, which took a Ctrl-C that
    # arrived meanwhile and reported it as ignored: the run went on.
    for _ in range(3):
        child = terminal_child(STARTING)
        try:
            assert child.stdout.readline().strip() == "READY"
            os.killpg(child.pid, signal.SIGINT)
            out, err = child.communicate(timeout=10)
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
        assert "KeyboardInterrupt" in err and "Exception ignored" not in err, err
        assert child.returncode in (-signal.SIGINT, 128 + signal.SIGINT, 1)


class Rows:
    def __len__(self):
        return 64

    def __getitem__(self, i):
        import numpy as np
        return np.full(2, i, np.float32), i


@pytest.mark.parametrize("fmt", ["torch", "numpy"])
@pytest.mark.parametrize("batch", [2, 7])  # mid-epoch, and the epoch's last batch
def test_ctrl_c_while_a_batch_is_shaped_gives_it_back(fmt, batch):
    # KeyboardInterrupt raised inside the shaping of batch `batch` (where a
    # Ctrl-C that came during the wait lands): the loop that goes on gets
    # that batch and the rest of the epoch, each sample once, and a state
    # taken in the handler resumes with exactly the samples not yet seen.
    import sluice

    def shaping_calls(limit):
        calls = {"n": 0}

        def tracer(frame, event, arg):
            if event == "call" and frame.f_code.co_filename.endswith("_structure.py"):
                calls["n"] += 1
                if calls["n"] == limit:
                    raise KeyboardInterrupt
            return None
        return calls, tracer

    loader = sluice.Loader(Rows(), batch_size=8, num_workers=2, format=fmt)
    calls, tracer = shaping_calls(0)
    sys.settrace(tracer)
    try:
        first = [int(i) for _, ids in loader for i in ids]
    finally:
        sys.settrace(None)
    per_batch = calls["n"] // 8
    assert sorted(first) == list(range(64)) and per_batch > 0
    got, state = [], None
    calls, tracer = shaping_calls(batch * per_batch + 1)
    sys.settrace(tracer)
    try:
        while True:
            try:
                for _, ids in loader:
                    got += [int(i) for i in ids]
                break
            except KeyboardInterrupt:
                seen, state = list(got), loader.state_dict()
    finally:
        sys.settrace(None)
    assert state is not None and len(seen) == 8 * batch
    assert sorted(got) == list(range(64)), "the epoch went on with the batch given back"
    loader.close()
    again = sluice.Loader(Rows(), batch_size=8, num_workers=2, format=fmt)
    again.load_state_dict(state)
    rest = [int(i) for _, ids in again for i in ids]
    again.close()
    assert sorted(seen + rest) == list(range(64))
