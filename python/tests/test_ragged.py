"""Strings, bytes and variable-length arrays carried in the slot: the values
row padded to its room plus a lengths field (sluice/_structure.py), delivered
as lists of str / bytes, zero-copy views, or the (values, lengths) pair."""
import os

import numpy as np
import pytest
import torch

import sluice


def text(i):
    # Empty, ASCII, accented and outside the BMP: every UTF-8 length.
    return ["", "img/%05d.jpg" % i, "café-%d" % i, "🐍" * (i % 4) + "ü"][i % 4]


def blob(i):
    return bytes((i * 7 + k) % 256 for k in range(i % 40))


def tokens(i):
    return np.arange(i % 9, dtype=np.int32) + 100 * i


class Captions:
    def __init__(self, n=50):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return {"path": text(i), "raw": blob(i), "tokens": tokens(i), "id": i}


class Long(Captions):
    """Sample 33's tokens are longer than the room the test gives."""

    def __getitem__(self, i):
        sample = super().__getitem__(i)
        if i == 33:
            sample["tokens"] = np.zeros(64, np.int32)
        return sample


def ids_of(batch):
    return np.asarray(batch["id"]).tolist()


@pytest.mark.parametrize("fmt", ["torch", "numpy", "dlpack"])
def test_strings_bytes_and_ragged_arrays_round_trip(fmt):
    loader = sluice.Loader(Captions(), batch_size=8, workers=2, epochs=1, format=fmt, ragged={"tokens": 16})
    seen = []
    for batch in loader:
        ids = ids_of(batch)
        seen += ids
        assert batch["path"] == [text(i) for i in ids]
        assert batch["raw"] == [blob(i) for i in ids]
        if fmt == "dlpack":
            values, lengths = (np.from_dlpack(a) for a in batch["tokens"])
            assert values.shape == (len(ids), 16) and values.dtype == np.int32
            assert lengths.tolist() == [len(tokens(i)) for i in ids]
            for row, i in zip(values, ids):
                assert row[:len(tokens(i))].tolist() == tokens(i).tolist()
                assert not row[len(tokens(i)):].any()  # padded with zeros
        else:
            kind = torch.Tensor if fmt == "torch" else np.ndarray
            assert all(isinstance(t, kind) for t in batch["tokens"])
            assert [np.asarray(t).tolist() for t in batch["tokens"]] == [tokens(i).tolist() for i in ids]
    assert seen == list(range(50))


def test_ragged_views_are_zero_copy_into_the_arena():
    loader = sluice.Loader(Captions(), batch_size=8, workers=1, format="torch", ragged={"tokens": 16})
    base, size = loader.memory()
    batch = next(iter(loader))
    for t in batch["tokens"]:
        if len(t):  # an empty view has no address
            assert base <= t.data_ptr() < base + size


@pytest.mark.parametrize("workers", [1, 3])
def test_the_same_batches_for_any_worker_count_and_workers_0(workers):
    def run(w):
        loader = sluice.Loader(Captions(), batch_size=4, workers=w, epochs=1, shuffle=True, seed=5,
                               format="numpy", ragged={"tokens": 16})
        return [(b["path"], b["raw"], [t.tolist() for t in b["tokens"]], ids_of(b)) for b in loader]
    assert run(workers) == run(0)


def test_resume_carries_strings_exactly():
    def loader():
        return sluice.Loader(Captions(), batch_size=4, workers=2, shuffle=True, seed=3, epochs=2,
                             ragged={"tokens": 16})
    full = loader()
    whole = [b["path"] for _ in range(2) for b in full]
    first = loader()
    it = iter(first)
    head = [next(it)["path"] for _ in range(5)]
    state = first.state_dict()
    first.close()
    second = loader()
    second.load_state_dict(state)
    rest = [b["path"] for _ in range(2) for b in second]
    assert head + rest == whole


def test_a_sample_longer_than_its_room_is_named_and_can_be_skipped():
    with pytest.raises(sluice.Error, match=r"dataset\[33\]\['tokens'\] holds 64 entries.*ragged=\{'tokens': 64\}"):
        for _ in sluice.Loader(Long(), batch_size=8, workers=2, epochs=1, ragged={"tokens": 16}):
            pass
    loader = sluice.Loader(Long(), batch_size=8, workers=2, epochs=1, ragged={"tokens": 16}, on_error="skip")
    ids = [i for b in loader for i in ids_of(b)]
    assert ids == [i for i in range(50) if i != 33]
    assert loader.stats()["skipped_samples"] == [33]


def test_a_long_first_string_gets_room_for_it():
    class Grows:
        def __len__(self):
            return 6

        def __getitem__(self, i):
            return "x" * (5000 + i)
    got = [s for b in sluice.Loader(Grows(), batch_size=3, workers=1, epochs=1) for s in b]
    assert got == ["x" * (5000 + i) for i in range(6)]


def test_declared_fields_and_a_tuple_sample():
    class Pairs:
        def __len__(self):
            return 12

        def __getitem__(self, i):
            return text(i), tokens(i).astype(np.int64)
    loader = sluice.Loader(Pairs(), batch_size=4, workers=2, epochs=1, format="torch",
                           fields=[("name", "str", (32,)), ("tok", "int64", (None,))])
    for k, (names, toks) in enumerate(loader):
        ids = range(4 * k, 4 * k + 4)
        assert names == [text(i) for i in ids]
        assert [t.tolist() for t in toks] == [tokens(i).tolist() for i in ids]
        assert all(t.dtype == torch.int64 for t in toks)


def test_what_cannot_be_ragged_is_refused_clearly():
    with pytest.raises(sluice.Error, match="ragged= names 'nope'"):
        sluice.Loader(Captions(), ragged={"nope": 4})
    with pytest.raises(sluice.Error, match="a room is an int"):
        sluice.Loader(Captions(), ragged={"tokens": 0})
    with pytest.raises(sluice.Error, match="not str as the first was"):
        class Mixed(Captions):
            def __getitem__(self, i):
                sample = super().__getitem__(i)
                if i == 5:
                    sample["path"] = 5
                return sample
        for _ in sluice.Loader(Mixed(), batch_size=4, workers=1, epochs=1, ragged={"tokens": 16}):
            pass
    with pytest.raises(sluice.Error, match="fill= writes into fixed-size views"):
        sluice.Loader(fill=lambda i, out: None, size=4, fields={"s": ("str", (8,))})


class Awkward:
    """A non-UTF-8 file name as os.fsdecode makes it, an empty token list, a strided memoryview."""

    def __len__(self):
        return 12

    def __getitem__(self, i):
        return {"path": os.fsdecode(b"img-\xff-%d.jpg" % i),
                "tok": np.arange(3, dtype=np.int64) if i == 0 else list(range(i % 3)),
                "view": memoryview(np.arange(40, dtype=np.uint8))[::1 + i % 2]}


@pytest.mark.parametrize("workers", [0, 2])
def test_surrogates_empty_lists_and_strided_views(workers):
    got = []
    for b in sluice.Loader(Awkward(), batch_size=3, workers=workers, epochs=1, format="numpy", ragged={"tok": 4}):
        got += zip(b["path"], [t.tolist() for t in b["tok"]], b["view"])
    assert [p for p, _, _ in got] == [os.fsdecode(b"img-\xff-%d.jpg" % i) for i in range(12)]
    assert [t for _, t, _ in got] == [[0, 1, 2]] + [list(range(i % 3)) for i in range(1, 12)]
    assert [v for _, _, v in got] == [bytes(range(0, 40, 1 + i % 2)) for i in range(12)]
