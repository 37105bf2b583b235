"""state_dict / load_state_dict, and run records like `sluice run --record`."""
import io
import json
import subprocess

import numpy as np
import pytest
import torch

import sluice
from conftest import pipeline


def summary(batch):
    return (batch.epoch, batch.index, tuple(int(i) for i in batch.sample_ids),
            np.from_dlpack(batch["x"]).tobytes())


def drain(loader):
    out = []
    for _ in range(10):  # epochs, with a bound
        if loader.finished:
            break
        out.extend(summary(batch) for batch in loader)
    return out


def test_resume_mid_epoch_with_another_worker_count():
    a = sluice.Loader(pipeline("counting.lua"), workers=2)
    it = iter(a)
    head = [summary(next(it)) for _ in range(5)]
    state = a.state_dict()
    rest = [summary(batch) for batch in it] + drain(a)
    assert len(head) + len(rest) == 26 and rest[0][:2] == (0, 5)

    # A checkpoint goes through torch.save like a model's.
    buffer = io.BytesIO()
    torch.save({"loader": state}, buffer)
    buffer.seek(0)
    restored = torch.load(buffer)["loader"]
    assert restored == state and json.loads(json.dumps(state)) == state

    for workers in (1, 3):
        b = sluice.Loader(pipeline("counting.lua"), workers=workers, ordered=(workers == 1))
        b.load_state_dict(restored)
        assert b.epoch == 0
        if workers == 1:
            assert drain(b) == rest
        else:  # unordered: the same batches, in completion order
            assert sorted(drain(b)) == sorted(rest)


def test_state_dict_before_iterating_and_at_the_end():
    loader = sluice.Loader(pipeline("counting.lua"), epochs=1)
    start = loader.state_dict()
    assert start["sluice_loader_state"]["epoch"] == 0 and start["sluice_loader_state"]["batch"] == 0
    everything = drain(loader)
    again = sluice.Loader(pipeline("counting.lua"), epochs=1)
    again.load_state_dict(start)
    assert drain(again) == everything
    end = loader.state_dict()
    finished = sluice.Loader(pipeline("counting.lua"), epochs=1)
    finished.load_state_dict(end)
    assert list(finished) == []


def test_load_state_dict_refuses_other_plans_and_junk():
    state = sluice.Loader(pipeline("counting.lua")).state_dict()
    with pytest.raises(sluice.Error, match="seed"):
        sluice.Loader(pipeline("counting.lua"), seed=8).load_state_dict(state)
    with pytest.raises(sluice.Error, match="state_dict"):
        sluice.Loader(pipeline("counting.lua")).load_state_dict({"epoch": 3})
    broken = {**state, "sluice_loader_state": {"epoch": "three"}}
    with pytest.raises(sluice.Error):
        sluice.Loader(pipeline("counting.lua")).load_state_dict(broken)


def test_run_record_matches_the_command_line(tmp_path, cli):
    path = pipeline("broken.lua")
    ours = tmp_path / "python.jsonl"
    theirs = tmp_path / "cli.jsonl"
    with sluice.Loader(path, on_error="skip", workers=3, record=ours) as loader:
        for batch in loader:
            pass
    run = subprocess.run([cli, "run", path, "--quiet", "--on-error", "skip", "--record", str(theirs)],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert ours.read_text().splitlines()[0] == theirs.read_text().splitlines()[0]  # the same header
    verify = subprocess.run([cli, "verify", str(ours), str(theirs)], capture_output=True, text=True, timeout=60)
    assert verify.returncode == 0, verify.stdout + verify.stderr


def test_run_record_lines(tmp_path):
    record = tmp_path / "run.jsonl"
    loader = sluice.Loader(pipeline("broken.lua"), on_error="skip", record=record)
    batches = sum(1 for _ in loader)
    lines = [json.loads(line) for line in record.read_text().splitlines()]  # complete at the end of the run
    assert lines[0]["sluice_record"] == 1 and lines[0]["options"]["dataset_size"] == 100
    assert len([line for line in lines if "batch" in line]) == batches == 13
    assert sorted(line["skip"]["sample"] for line in lines if "skip" in line) == [13, 57]


def test_state_dict_at_an_epoch_end_whose_last_batch_was_skipped():
    # Each epoch's batch 12 is all skipped: the epoch ends with batch 11, and
    # the state taken there must still hold the next epoch's first batch.
    def ids(loader):
        return [int(i) for batch in loader for i in batch.sample_ids]

    loader = sluice.Loader(pipeline("tail_broken.lua"))
    assert ids(loader) == list(range(96)) and loader.epoch == 1
    state = loader.state_dict()
    assert state["sluice_loader_state"]["epoch"] == 1 and state["sluice_loader_state"]["batch"] == 0
    second = ids(loader)
    assert second == list(range(96))

    resumed = sluice.Loader(pipeline("tail_broken.lua"))
    resumed.load_state_dict(state)
    assert resumed.epoch == 1
    assert ids(resumed) == second
    assert ids(resumed) == list(range(96)) and resumed.finished


def test_resume_on_another_world_size_from_every_ranks_state():
    # Global batch 24: 3 ranks of 8 stop at different steps, 2 ranks of 12
    # continue; the union of each global step is the 1-rank run's.
    def steps(loader):
        out = {}
        for _ in range(3):
            if loader.finished:
                break
            for batch in loader:
                out.setdefault((batch.epoch, batch.index), []).extend(int(i) for i in batch.sample_ids)
        return out

    whole = steps(sluice.Loader(pipeline("counting.lua"), batch_size=24, drop_last=True))
    states, before = [], {}
    for rank in range(3):
        loader = sluice.Loader(pipeline("counting.lua"), batch_size=8, drop_last=True, rank=rank, world_size=3)
        it = iter(loader)
        for _ in range(2 + rank):  # rank r delivers steps 0 .. r+1 of epoch 0
            batch = next(it)
            before.setdefault((batch.epoch, batch.index), []).extend(int(i) for i in batch.sample_ids)
        states.append(loader.state_dict())
        loader.close()

    after = {}
    for rank in range(2):
        loader = sluice.Loader(pipeline("counting.lua"), batch_size=12, drop_last=True, rank=rank, world_size=2)
        loader.load_state_dict(list(reversed(states)))
        assert "resumes at epoch 0, batch 2" in loader.resume_note and "3 per-rank batches" in loader.resume_note
        for key, ids in steps(loader).items():
            after.setdefault(key, []).extend(ids)

    assert min(after) == (0, 2)
    assert {k: sorted(v) for k, v in after.items()} == {k: sorted(v) for k, v in whole.items() if k >= (0, 2)}
    assert sorted(before[(0, 0)]) == sorted(whole[(0, 0)]) and sorted(before[(0, 1)]) == sorted(whole[(0, 1)])

    with pytest.raises(sluice.Error, match="ranks"):
        sluice.Loader(pipeline("counting.lua"), batch_size=12, world_size=2).load_state_dict(states[:2])
