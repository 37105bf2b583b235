"""sluice.Loader(sequence=...): a Keras-style sequence whose items are whole batches."""
import numpy as np
import pytest
import torch

import sluice
from datasets import Batches


def check(x, y, b, rows):
    assert x.shape == (rows, 3) and y.shape == (rows,)
    assert np.array_equal(np.from_dlpack(y), 10 * b + np.arange(rows))
    assert np.allclose(np.from_dlpack(x), b + np.arange(rows)[:, None] / 100.0)


def test_batches_whole_in_order_with_a_short_last_one():
    loader = sluice.Loader(sequence=Batches(), workers=2, epochs=1)
    assert len(loader) == 5 and loader.info["fields"] == [("0", "float32", (4, 3)), ("1", "int64", (4,))]
    assert loader.batch_size == 4 and repr(loader) == "<sluice.Loader Batches: 5 batches of 4 per epoch>"
    seen = 0
    for b, (x, y) in enumerate(loader):
        check(x, y, b, 2 if b == 4 else 4)
        t = torch.from_dlpack(x)  # zero copy, cut to the batch's rows
        assert t.data_ptr() == x.data_ptr and t.shape == (x.shape[0], 3)
        seen += 1
    assert seen == 5


def test_shuffled_batch_order_each_batch_once_per_epoch():
    loader = sluice.Loader(sequence=Batches(count=12, rows=4, last=4), shuffle=True, seed=4, epochs=2, workers=3)
    orders = []
    for _ in range(2):
        order = []
        for x, y in loader:
            b = int(np.from_dlpack(y)[0]) // 10
            check(x, y, b, 4)
            order.append(b)
        assert sorted(order) == list(range(12))
        orders.append(order)
    assert orders[0] != orders[1] and orders[0] != list(range(12))


def test_dict_batches_are_dicts_and_batch_size_belongs_to_the_sequence():
    class Named(Batches):
        def __getitem__(self, b):
            x, y = super().__getitem__(b)
            return {"image": x, "label": y}
    x = next(iter(sluice.Loader(sequence=Named(), epochs=1)))
    assert sorted(x) == ["image", "label"] and x["image"].shape == (4, 3)
    with pytest.raises(sluice.Error, match="give batch_size to the sequence"):
        sluice.Loader(sequence=Named(), batch_size=8)
    with pytest.raises(sluice.Error, match="drop_last does not apply to a sequence"):
        sluice.Loader(sequence=Named(), drop_last=True)


def test_a_batch_larger_than_the_first_is_an_error_naming_it():
    class Growing(Batches):
        def __getitem__(self, b):
            return super().__getitem__(b) if b != 3 else (np.zeros((6, 3), np.float32), np.arange(6))
    with pytest.raises(sluice.Error, match=r"sample 3 .*sequence\[3\]\[0\] has 6 rows, more than the first batch's 4"):
        list(sluice.Loader(sequence=Growing(), epochs=1))
    # Declared rows make room for it.
    loader = sluice.Loader(sequence=Growing(), epochs=1, fields=[("x", "float32", (6, 3)), ("y", "int64", (6,))])
    assert [x.shape[0] for x, _ in loader] == [4, 4, 4, 6, 2]


def test_a_batch_that_raises_is_skipped_whole_with_its_reason():
    class Flaky(Batches):
        def __getitem__(self, b):
            if b == 2:
                raise OSError("batch 2 is unreadable")
            return super().__getitem__(b)
    loader = sluice.Loader(sequence=Flaky(), epochs=1, on_error="skip")
    assert [int(np.from_dlpack(y)[0]) // 10 for _, y in loader] == [0, 1, 3, 4]
    stats = loader.stats()
    assert stats["skipped_samples"] == [2] and "sequence[2] raised OSError: batch 2 is unreadable" in \
        stats["skip_reasons"][0]
