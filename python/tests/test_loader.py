"""sluice.Loader against real worker processes: counts, content, errors, stats."""
import time

import numpy as np
import pytest
import torch

import sluice
from conftest import pipeline


def content_ok(batch):
    ids = np.from_dlpack(batch["id"])
    x = np.from_dlpack(batch["x"])
    expected = 10.0 * ids[:, None] + np.arange(4)[None, :]
    return np.array_equal(ids, batch.sample_ids.astype(np.int64)) and np.array_equal(x, expected)


def test_len_counts_and_content():
    loader = sluice.Loader(pipeline("counting.lua"))
    assert len(loader) == 13  # 100 samples in batches of 8, the last one short
    epochs = []
    for _ in range(2):
        seen = []
        for batch in loader:
            assert content_ok(batch)
            assert len(batch) == (4 if batch.index == 12 else 8)
            seen.append((batch.epoch, batch.index, tuple(batch.sample_ids)))
        epochs.append(seen)
    for e, seen in enumerate(epochs):
        assert [(epoch, index) for epoch, index, _ in seen] == [(e, i) for i in range(13)]
        ids = [i for _, _, batch_ids in seen for i in batch_ids]
        assert sorted(ids) == list(range(100))  # each sample exactly once per epoch
    assert [ids for *_, ids in epochs[0]] != [ids for *_, ids in epochs[1]]  # shuffled per epoch
    assert list(loader) == []  # the run (epochs = 2) is over
    assert loader.finished


def test_batch_interface():
    loader = sluice.Loader(pipeline("counting.lua"), epochs=1, shuffle=False)
    with next(iter(loader)) as batch:
        assert batch.keys() == ["x", "id"]
        assert list(batch) == ["x", "id"]
        assert "x" in batch and "y" not in batch and batch.get("y") is None
        assert [name for name, _ in batch.items()] == ["x", "id"]
        assert batch["x"].shape == (8, 4) and batch["x"].dtype == "float32"
        assert batch["id"].shape == (8,) and batch["id"].dtype == "int64"
        assert batch["x"].nbytes == 8 * 4 * 4
        assert batch["x"].__dlpack_device__() == (1, 0)
        with pytest.raises(sluice.Error, match=r"expects a \(device_type, device_id\) pair of ints, got 'cpu'"):
            batch["x"].__dlpack__(dl_device="cpu")
        with pytest.raises(sluice.Error, match="host memory"):
            batch["x"].__dlpack__(dl_device=(2, 0))
        assert list(batch.sample_ids) == list(range(8))  # shuffle=False (a Python bool) took effect
        with pytest.raises(sluice.Error, match="no field 'y'; its fields are x, id"):
            batch["y"]
    assert batch.released
    with pytest.raises(sluice.Error, match="released"):
        batch["x"]


def test_zero_copy_into_the_arena():
    loader = sluice.Loader(pipeline("counting.lua"), epochs=1)
    base, size = loader.memory()
    batch = next(iter(loader))
    for name in ("x", "id"):
        t = torch.from_dlpack(batch[name])
        a = np.from_dlpack(batch[name])
        assert base <= t.data_ptr() < base + size
        assert t.data_ptr() == a.ctypes.data == batch[name].data_ptr
        assert t.data_ptr() + t.numel() * t.element_size() <= base + size
    assert torch.equal(torch.from_dlpack(batch["id"]), torch.from_numpy(batch.sample_ids.astype(np.int64)))


def test_tensor_outlives_its_batch_and_then_returns_the_slot():
    # prefetch = 3 slots, so a third held batch has nowhere to go.
    loader = sluice.Loader(pipeline("counting.lua"), epochs=1, prefetch=3, workers=1, held_timeout_ms=300)
    it = iter(loader)
    batch = next(it)
    t = torch.from_dlpack(batch["x"])
    ids = torch.from_numpy(batch.sample_ids.astype(np.int64))
    batch.release()
    del batch
    held = [next(it), next(it)]  # t still holds the first slot: all 3 slots are taken
    assert torch.equal(t, 10.0 * ids[:, None].float() + torch.arange(4).float())
    with pytest.raises(sluice.Error, match="all 3 batch slots have been held by the consumer for 300 ms"):
        next(it)
    del t  # the last reference to the first slot: it returns to the loader
    batch = next(it)  # the same iterator goes on
    assert batch.index == 3 and content_ok(batch)


def test_holding_every_slot_raises_instead_of_hanging():
    loader = sluice.Loader(pipeline("counting.lua"), epochs=1, prefetch=2)
    assert loader.slots == 2
    held = []
    with pytest.raises(sluice.Error, match="batch slots have been held.*release batches"):
        for batch in loader:
            held.append(torch.from_dlpack(batch["x"]))
    assert len(held) == 2
    held.clear()
    del batch
    assert sum(1 for _ in loader) == 11  # the rest of the epoch, after the release


def test_unknown_override_and_bad_value():
    with pytest.raises(sluice.Error, match="unknown setting 'wrokers'; the settings are epochs, workers"):
        sluice.Loader(pipeline("counting.lua"), wrokers=3)
    with pytest.raises(sluice.Error, match="workers expects an integer"):
        sluice.Loader(pipeline("counting.lua"), workers="many")
    # A refused setting is also a ValueError, as DataLoader raises for a bad argument.
    with pytest.raises(ValueError, match="batch_size expects an integer"):
        sluice.Loader(pipeline("counting.lua"), batch_size=0)
    with pytest.raises(sluice.OptionsError, match="options.rank 3 is not below options.world_size 2"):
        next(iter(sluice.Loader(pipeline("counting.lua"), rank=3, world_size=2)))  # checked as the workers start
    with pytest.raises(sluice.Error, match="cannot"):
        sluice.Loader(pipeline("no_such_pipeline.lua"))


def test_device_cuda_is_a_clear_error():
    with pytest.raises(sluice.Error, match=r"device expects cpu or auto \(this build delivers batches in host memory\), got 'cuda'"):
        sluice.Loader(pipeline("counting.lua"), device="cuda")
    assert sluice.Loader(pipeline("counting.lua"), device="auto").info["device"] == "cpu"


def test_lua_map_error_names_script_line_and_sample():
    loader = sluice.Loader(pipeline("broken.lua"))
    with pytest.raises(sluice.Error) as error:
        for _ in loader:
            pass
    message = str(error.value)
    assert "map (" in message and "broken.lua:10: sample 13 is broken" in message
    assert "worker" in message and "epoch 0, batch 1" in message
    assert not isinstance(error.value, RuntimeError) and isinstance(error.value, Exception)


def test_stats_and_skip_report():
    loader = sluice.Loader(pipeline("broken.lua"), on_error="skip")
    delivered = sum(len(batch) for batch in loader)
    stats = loader.stats()
    assert delivered == 98
    assert stats["batches_delivered"] == 13 and stats["samples_delivered"] == 98
    assert stats["bytes_delivered"] == 98 * 8
    assert sorted(stats["skipped_samples"]) == [13, 57]
    reasons = dict(zip(stats["skipped_samples"], stats["skip_reasons"]))
    assert "sample 13 is broken" in reasons[13] and "sample 57 is broken" in reasons[57]
    for key in ("consumer_wait_ns", "consumer_waits", "max_in_flight", "first_batch_ns", "slots_full_ns",
                "worker_fill_ns", "worker_idle_ns", "worker_cpu_ns", "worker_runqueue_ns", "worker_restarts",
                "batches_retried", "empty_batches"):
        assert isinstance(stats[key], int)
    assert stats["worker_cpu_ns"] > 0
    assert stats["workers"] == 2 and stats["autotune"] == ""


def test_prefetch_1_is_refused_before_a_loop_could_hang_on_it():
    with pytest.raises(sluice.Error, match="prefetch = 1 leaves no slot to fill while a loop holds its batch"):
        next(iter(sluice.Loader(pipeline("counting.lua"), prefetch=1)))


def test_auto_workers_say_what_they_chose():
    loader = sluice.Loader(pipeline("counting.lua"), workers="auto", epochs=20)
    ids = [int(i) for _ in range(20) for batch in loader for i in np.from_dlpack(batch["id"])]  # an epoch each
    assert sorted(ids) == sorted(list(range(100)) * 20)  # each sample once per epoch
    stats = loader.stats()
    assert stats["workers"] >= 1
    assert "workers" in stats["autotune"], stats["autotune"]


def test_workers_stop_at_close():
    import os
    loader = sluice.Loader(pipeline("counting.lua"), workers=2)
    next(iter(loader))
    pids = loader.worker_pids()
    assert len(pids) == 2 and all(os.path.exists(f"/proc/{pid}") for pid in pids)
    loader.close()
    deadline = time.monotonic() + 5
    while any(os.path.exists(f"/proc/{pid}") for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.01)  # a worker's zombie is reaped by init once the zygote is gone
    assert not any(os.path.exists(f"/proc/{pid}") for pid in pids)
    with pytest.raises(sluice.Error, match="closed"):
        loader.stats()


def test_lua_map_error_is_the_command_lines_message(cli, tmp_path):
    import subprocess
    path = pipeline("broken.lua")
    state = tmp_path / "state.json"
    run = subprocess.run([cli, "run", path, "--quiet", "--state", str(state)], capture_output=True, text=True,
                         timeout=60)
    assert run.returncode == 1
    prefix = "sluice run: error: "
    assert run.stderr.startswith(prefix)
    # After the message, where the run's state went (for --resume once the map is mended).
    message, _, after = run.stderr[len(prefix):].partition("\nsluice run: stopped by the error above after ")
    assert after and str(state) in after and state.exists()
    with pytest.raises(sluice.Error) as error:
        for _ in sluice.Loader(path):
            pass
    assert str(error.value) == message.rstrip("\n")


def test_another_thread_may_ask_for_stats_while_the_loop_waits():
    import threading
    loader = sluice.Loader(pipeline("counting.lua"), epochs=1, workers=1)
    seen, stop = [], threading.Event()

    def monitor():
        while not stop.is_set():
            seen.append(loader.stats()["batches_delivered"])

    thread = threading.Thread(target=monitor)
    thread.start()
    try:
        assert sum(len(batch) for batch in loader) == 100
    finally:
        stop.set()
        thread.join()
    assert seen and max(seen) <= 13
