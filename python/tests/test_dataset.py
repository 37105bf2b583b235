"""sluice.Loader(dataset=...): a map-style Python dataset in forked workers."""
import json
import os
import re
import time

import numpy as np
import pytest
import torch

import sluice
from datasets import Broken, Counting, Pairs, Random, Reshaped, counting_ok


def epoch_ids(loader):
    return [tuple(int(i) for i in batch.sample_ids) for batch in loader]


def test_each_sample_once_in_plan_order_with_any_worker_count():
    runs = {}
    for workers in (1, 3):
        loader = sluice.Loader(dataset=Counting(), batch_size=8, shuffle=True, seed=7, epochs=2, workers=workers)
        assert len(loader) == 13
        epochs = []
        for _ in range(2):
            seen = []
            for batch in loader:
                ids = np.from_dlpack(batch["id"])
                assert counting_ok(np.from_dlpack(batch["x"]), ids)
                assert np.array_equal(ids, batch.sample_ids.astype(np.int64))
                seen.append(tuple(int(i) for i in ids))
            assert sorted(i for ids in seen for i in ids) == list(range(100))
            epochs.append(seen)
        assert epochs[0] != epochs[1]  # shuffled per epoch
        runs[workers] = epochs
    assert runs[1] == runs[3]


def test_batches_are_zero_copy_views_of_the_arena():
    loader = sluice.Loader(dataset=Counting(), batch_size=8, epochs=1)
    base, size = loader.memory()
    batch = next(iter(loader))
    assert batch.keys() == ["x", "id"]
    assert batch["x"].shape == (8, 4) and batch["x"].dtype == "float32" and batch["id"].dtype == "int64"
    t = torch.from_dlpack(batch["x"])
    assert base <= t.data_ptr() < base + size and t.data_ptr() == batch["x"].data_ptr


def test_tuples_and_single_arrays_are_yielded_as_such():
    loader = sluice.Loader(dataset=Pairs(), batch_size=10, epochs=1)
    x, y = next(iter(loader))
    assert x.dtype == "float32" and y.dtype == "int32" and y.shape == (10,)
    assert counting_ok(np.from_dlpack(x), np.from_dlpack(y).astype(np.int64))

    class Single(Counting):
        def __getitem__(self, i):
            return np.full((2, 2), i, np.uint8)
    batch = next(iter(sluice.Loader(dataset=Single(), batch_size=4, epochs=1)))
    assert isinstance(batch, sluice.Array) and batch.shape == (4, 2, 2)
    assert np.from_dlpack(batch)[:, 0, 0].tolist() == [0, 1, 2, 3]


@pytest.mark.parametrize("shape", [True, False])
def test_a_later_sample_that_differs_is_an_error_naming_it(shape):
    with pytest.raises(sluice.Error) as error:
        for _ in sluice.Loader(dataset=Reshaped(37, shape), batch_size=8, epochs=1):
            pass
    message = str(error.value)
    assert "sample 37 (epoch 0, batch 4" in message
    if shape:
        assert "dataset[37]['x'] has shape (5,), the first had (4,)" in message
    else:
        assert "dataset[37]['x'] is float64, the first was float32" in message


def test_a_python_exception_carries_the_workers_traceback_and_the_sample():
    with pytest.raises(sluice.Error) as error:
        for _ in sluice.Loader(dataset=Broken(), batch_size=8, epochs=1, workers=2):
            pass
    message = str(error.value)
    assert "failed on sample 13 (epoch 0, batch 1 (samples 8 to 15))" in message
    assert "dataset[13] raised ValueError: sample 13 is broken" in message
    assert "Traceback (most recent call last)" in message and "datasets.py" in message
    assert "in __getitem__" in message


def test_on_error_skip_drops_the_samples_with_their_reasons():
    loader = sluice.Loader(dataset=Broken(), batch_size=8, epochs=1, on_error="skip")
    delivered = sorted(int(i) for batch in loader for i in batch.sample_ids)
    assert delivered == [i for i in range(100) if i not in (13, 57)]
    stats = loader.stats()
    assert sorted(stats["skipped_samples"]) == [13, 57]
    for sample, reason in zip(stats["skipped_samples"], stats["skip_reasons"]):
        assert "ValueError: sample %d is broken" % sample in reason


def test_a_first_sample_that_fails_is_an_error_here():
    class FirstBroken(Counting):
        def __getitem__(self, i):
            raise KeyError("no sample %d" % i)
    with pytest.raises(sluice.Error, match=r"dataset\[0\] raised KeyError: 'no sample 0'\nTraceback"):
        sluice.Loader(dataset=FirstBroken(), batch_size=4)
    with pytest.raises(sluice.Error, match=r"the first 16 samples all failed"):
        sluice.Loader(dataset=FirstBroken(), batch_size=4, on_error="skip")


class FirstEndsItsProcess(Counting):
    """Sample 0 segfaults (how="segv"), calls os._exit(3) ("exit") or never returns ("hang")."""

    def __init__(self, how):
        super().__init__(24)
        self.how = how

    def __getitem__(self, i):
        if i == 0:
            print("making sample 0 the %s way" % self.how, flush=True)
            if self.how == "segv":
                import ctypes
                ctypes.string_at(0)
            elif self.how == "exit":
                os._exit(3)
            else:
                time.sleep(3600)
        return super().__getitem__(i)


@pytest.mark.parametrize("how, says", [
    ("segv", r"was killed by signal 11, SIGSEGV \(Segmentation fault\); its last output:\nmaking sample 0 the segv way"),
    ("exit", r"exited with status 3; its last output:\nmaking sample 0 the exit way"),
    ("hang", r"ran past 0.3 s \(batch_timeout_ms, after 0.2 s to start\)"),
])
def test_a_first_sample_that_ends_its_process_does_not_end_this_one(how, says, monkeypatch):
    # The first sample is made to learn the fields: in a child first, so that
    # this process lives to raise the error, or to go on under skip.
    monkeypatch.setattr(sluice._trial_child, "START_ALLOWANCE_S", 0.2)
    with pytest.raises(sluice.Error, match=r"dataset\[0\] ended the process that made it \(.*\): it " + says):
        sluice.Loader(dataset=FirstEndsItsProcess(how), batch_size=4, batch_timeout_ms=300)
    if how == "hang":
        return  # a worker would wait out its start-up allowance too
    loader = sluice.Loader(dataset=FirstEndsItsProcess(how), batch_size=4, on_error="skip", workers=2, max_retries=1)
    assert sorted(i for batch in epoch_ids(loader) for i in batch) == list(range(1, 24))
    assert loader.stats()["skipped_samples"] == [0]
    loader.close()


def test_bad_arguments_are_clear_errors():
    with pytest.raises(sluice.Error, match="one of a pipeline path, dataset=, sequence= or fill= \\(got none\\)"):
        sluice.Loader()
    with pytest.raises(sluice.Error, match="is empty"):
        sluice.Loader(dataset=[])
    with pytest.raises(sluice.Error, match="unknown setting 'batchsize'"):
        sluice.Loader(dataset=Counting(), batchsize=3)
    with pytest.raises(sluice.OptionsError, match="seed expects an integer, got 'many'"):
        sluice.Loader(dataset=Counting(), seed="many")
    with pytest.raises(ValueError, match=r"needs len\(\) and \[index\]"):
        sluice.Loader(dataset=iter(range(3)))
    with pytest.raises(sluice.Error, match=r"needs len\(\) and \[index\]"):
        sluice.Loader(dataset=iter(range(3)))

    class Strings(Counting):
        def __getitem__(self, i):
            return {"name": np.array(["sample"])}  # a str is carried (test_ragged.py); an array of them is not
    with pytest.raises(sluice.Error, match=r"dataset\[0\]\['name'\] is <U6, which sluice does not carry"):
        sluice.Loader(dataset=Strings())

    class Nothing(Counting):
        def __getitem__(self, i):
            return {}
    for workers in (0, 2):  # alike with any worker count
        with pytest.raises(sluice.Error, match="samples need at least one field"):
            sluice.Loader(dataset=Nothing(), workers=workers)
    class Missing(Counting):
        def __getitem__(self, i):
            return {"x": None}
    with pytest.raises(sluice.Error, match=r"dataset\[0\]\['x'\] is None: each leaf"):
        sluice.Loader(dataset=Missing())


def test_rng_is_keyed_by_seed_epoch_and_sample_not_by_worker():
    def run(workers, seed=5):
        loader = sluice.Loader(dataset=Random(), batch_size=16, shuffle=True, seed=seed, epochs=2, workers=workers)
        out = {}
        for _ in range(2):
            for batch in loader:
                for i, row in zip(np.from_dlpack(batch["id"]), np.from_dlpack(batch["r"])):
                    out[(batch.epoch, int(i))] = row.copy()
        return out
    one, three = run(1), run(3)
    assert one.keys() == three.keys() and all(np.array_equal(one[k], three[k]) for k in one)
    assert np.array_equal(one[(1, 42)], np.random.default_rng([5, 1, 42]).random(3))
    assert not np.array_equal(one[(0, 42)], one[(1, 42)])
    assert not np.array_equal(one[(0, 42)], run(1, seed=6)[(0, 42)])
    with pytest.raises(sluice.Error, match="while sluice makes a sample"):
        sluice.rng()


def test_resume_mid_epoch_with_another_worker_count():
    def summary(batch):
        return batch.epoch, batch.index, np.from_dlpack(batch["x"]).tobytes()

    a = sluice.Loader(dataset=Counting(), batch_size=8, shuffle=True, seed=1, epochs=2, workers=2)
    it = iter(a)
    head = [summary(next(it)) for _ in range(5)]
    state = a.state_dict()
    rest = [summary(b) for b in it] + [summary(b) for b in a]
    assert len(head) + len(rest) == 26
    b = sluice.Loader(dataset=Counting(), batch_size=8, shuffle=True, seed=1, epochs=2, workers=1)
    b.load_state_dict(json.loads(json.dumps(state)))
    assert [summary(x) for x in b] + [summary(x) for x in b] == rest
    other = sluice.Loader(dataset=Counting(), batch_size=4, shuffle=True, seed=1, epochs=2)
    with pytest.raises(sluice.Error):
        other.load_state_dict(state)


def test_ranks_share_an_epoch():
    ids = []
    for rank in (0, 1):
        loader = sluice.Loader(dataset=Counting(), batch_size=5, shuffle=True, seed=2, epochs=1, rank=rank,
                               world_size=2)
        assert len(loader) == 10
        ids.append([i for batch in epoch_ids(loader) for i in batch])
    assert not set(ids[0]) & set(ids[1]) and sorted(ids[0] + ids[1]) == list(range(100))


def test_fill_writes_straight_into_the_slot():
    seen = []

    def fill(index, out):
        assert out["image"].shape == (2, 3) and out["image"].flags.writeable
        out["image"][...] = index
        out["label"][...] = -index
        seen.append(index)  # in the worker's copy: the host's list stays empty

    loader = sluice.Loader(fill=fill, size=20, fields={"image": ("uint8", (2, 3)), "label": ("int64", ())},
                           batch_size=6, epochs=1, workers=2)
    batches = list(loader)
    assert [len(b) for b in batches] == [6, 6, 6, 2]
    for batch in batches:
        ids = batch.sample_ids.astype(np.int64)
        assert np.array_equal(np.from_dlpack(batch["image"]), np.broadcast_to(ids[:, None, None], (len(ids), 2, 3)))
        assert np.array_equal(np.from_dlpack(batch["label"]), -ids)
    assert seen == []
    with pytest.raises(sluice.Error, match="fill= needs size="):
        sluice.Loader(fill=fill, fields={"image": ("uint8", (2, 3))})


def test_declared_fields_skip_the_trial_in_this_process():
    made = []

    class Watched(Counting):
        def __getitem__(self, i):
            made.append(i)
            return super().__getitem__(i)

    loader = sluice.Loader(dataset=Watched(), fields={"x": ("float32", (4,)), "id": ("int64", ())}, batch_size=50,
                           epochs=1)
    assert sum(len(b) for b in loader) == 100 and made == []
    declared_wrong = sluice.Loader(dataset=Counting(), fields={"x": ("float32", (3,)), "id": ("int64", ())},
                                   batch_size=50)
    with pytest.raises(sluice.Error, match=r"dataset\[(0|50)\]\['x'\] has shape \(4,\), fields= says \(3,\)"):
        next(iter(declared_wrong))


def test_run_records_match_across_worker_counts(tmp_path):
    lines = []
    for workers in (1, 2):
        path = tmp_path / ("run%d.jsonl" % workers)
        loader = sluice.Loader(dataset=Counting(), batch_size=8, shuffle=True, seed=3, epochs=1, workers=workers,
                               record=path)
        assert sum(1 for _ in loader) == 13
        loader.close()
        text = path.read_text().splitlines()
        assert len(text) == 14 and '"dataset":"Counting"' in text[0]
        lines.append(text[1:])
    assert lines[0] == lines[1]


def test_strided_and_fortran_arrays_are_copied_as_their_values():
    class Strided(Counting):
        def __getitem__(self, i):
            x = (10.0 * i + np.arange(8, dtype=np.float32) / 2)[::2]  # a strided view: 10 i + [0, 1, 2, 3]
            m = np.asfortranarray(np.arange(6, dtype=np.int16).reshape(2, 3) + i)
            return {"x": x, "m": m, "id": i}

    for batch in sluice.Loader(dataset=Strided(), batch_size=16, epochs=1):
        ids = np.from_dlpack(batch["id"])
        assert counting_ok(np.from_dlpack(batch["x"]), ids)
        expected = np.arange(6, dtype=np.int16).reshape(1, 2, 3) + ids[:, None, None].astype(np.int16)
        assert np.array_equal(np.from_dlpack(batch["m"]), expected)


@pytest.mark.parametrize("field,value,dtype", [("small", 300, "uint8"), ("small", -1, "uint8"),
                                               ("whole", 2.5, "int64"), ("flag", 2, "bool"),
                                               ("real", 1e40, "float32"), ("real", -1e39, "float32")])
def test_a_python_number_its_field_cannot_hold_is_an_error_naming_it(field, value, dtype):
    class Narrow(Counting):
        def __getitem__(self, i):
            sample = {"small": np.uint8(i), "whole": np.int64(i), "flag": np.bool_(i % 2), "real": np.float32(i)}
            if i == 9:
                sample[field] = value
            elif i > 0:  # Python numbers the fields hold exactly (a float field rounds, within its range)
                sample.update(small=255, whole=3.0, flag=True, real=0.1 if i % 2 else 3.4e38)
            return sample
    for workers in (1, 0):  # workers=0 checks as the workers do
        with pytest.raises(sluice.Error, match=r"dataset\[9\]\['%s'\] is %s, which %s cannot hold" % (field, re.escape(repr(value)), dtype)):
            for _ in sluice.Loader(dataset=Narrow(20), batch_size=4, workers=workers):
                pass
    batches = list(np.from_dlpack(b["small"]).tolist() for b in sluice.Loader(dataset=Narrow(8), batch_size=4))
    assert batches == [[0, 255, 255, 255], [255, 255, 255, 255]]


@pytest.mark.parametrize("workers", [0, 2])
def test_numpy_scalars_of_another_dtype_and_nan_are_refused_with_any_worker_count(workers):
    # A NumPy float64 is a float's subclass, not a Python number: refused like
    # any array of another dtype; NaN into an integer field cannot be held.
    class Drifting(Counting):
        def __getitem__(self, i):
            return {"label": 1 if i == 0 else np.float64(3.0)}

    class NaN(Counting):
        def __getitem__(self, i):
            return {"label": 1 if i == 0 else float("nan")}

    with pytest.raises(sluice.Error, match=r"dataset\[1\]\['label'\] is float64, the first was int64"):
        list(sluice.Loader(dataset=Drifting(8), batch_size=8, workers=workers))
    with pytest.raises(sluice.Error, match=r"dataset\[1\]\['label'\] is nan, which int64 cannot hold"):
        list(sluice.Loader(dataset=NaN(8), batch_size=8, workers=workers))


def test_auto_workers_for_a_dataset():
    loader = sluice.Loader(dataset=Counting(64), batch_size=4, workers="auto")
    ids = sorted(i for b in loader for i in np.from_dlpack(b["id"]).tolist())
    assert ids == list(range(64))
    assert loader.stats()["workers"] >= 1
