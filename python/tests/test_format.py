"""format="torch" | "numpy" | "dlpack", nested samples, and NumPy's array interface on fields."""
import collections
import gc

import numpy as np
import pytest
import torch

import sluice
from conftest import pipeline
from datasets import Counting


class Nested:
    """(image, (label, weight)): the issue's nested sample."""

    def __len__(self):
        return 24

    def __getitem__(self, i):
        return np.full((3, 4, 4), i, np.float32), (i, np.float32(i / 2))


class Deep:
    """A dict inside a dict, a tuple inside it, a bool mask."""

    def __len__(self):
        return 16

    def __getitem__(self, i):
        return {"x": np.arange(4, dtype=np.float32) + i,
                "meta": {"id": i, "pair": (np.int16(i), np.uint8(i % 3)), "mask": np.array([i % 2 == 0, True])}}


def test_a_nested_tuple_stays_nested_with_each_leafs_dtype():
    loader = sluice.Loader(dataset=Nested(), batch_size=4, workers=2, format="torch")
    for k, (image, (label, weight)) in enumerate(loader):
        assert image.dtype == torch.float32 and image.shape == (4, 3, 4, 4)
        assert label.dtype == torch.int64 and label.tolist() == [4 * k + j for j in range(4)]
        assert weight.dtype == torch.float32 and torch.equal(weight, label.float() / 2)
        assert torch.equal(image[:, 0, 0, 0], label.float())


@pytest.mark.parametrize("fmt", ["torch", "numpy", "dlpack"])
def test_a_nested_dict_in_every_format(fmt):
    kind = {"torch": torch.Tensor, "numpy": np.ndarray, "dlpack": sluice.Array}[fmt]
    batch = next(iter(sluice.Loader(dataset=Deep(), batch_size=4, format=fmt)))
    assert isinstance(batch, dict) and set(batch) == {"x", "meta"}
    assert set(batch["meta"]) == {"id", "pair", "mask"} and isinstance(batch["meta"]["pair"], tuple)
    leaves = [batch["x"], batch["meta"]["id"], *batch["meta"]["pair"], batch["meta"]["mask"]]
    assert all(isinstance(leaf, kind) for leaf in leaves)
    as_numpy = [np.asarray(leaf) for leaf in leaves]
    assert [a.dtype for a in as_numpy] == [np.float32, np.int64, np.int16, np.uint8, np.bool_]
    assert as_numpy[1].tolist() == [0, 1, 2, 3]
    assert as_numpy[4].tolist() == [[True, True], [False, True], [True, True], [False, True]]


Pair = collections.namedtuple("Pair", "image label")


class Named:
    """A namedtuple sample, as torchvision-style datasets return; and a list one."""

    def __init__(self, as_list=False):
        self.as_list = as_list

    def __len__(self):
        return 8

    def __getitem__(self, i):
        image, label = np.full((2, 2), i, np.float32), i
        return [image, label] if self.as_list else Pair(image, label)


@pytest.mark.parametrize("fmt", ["torch", "numpy", "dlpack"])
@pytest.mark.parametrize("workers", [0, 2])
def test_a_namedtuple_or_list_sample_comes_back_as_its_own_container(fmt, workers):
    batch = next(iter(sluice.Loader(dataset=Named(), batch_size=4, workers=workers, format=fmt)))
    assert type(batch) is Pair and np.asarray(batch.label).tolist() == [0, 1, 2, 3]
    assert np.asarray(batch.image).shape == (4, 2, 2)
    as_list = next(iter(sluice.Loader(dataset=Named(as_list=True), batch_size=4, workers=workers, format=fmt)))
    assert type(as_list) is list and np.asarray(as_list[1]).tolist() == [0, 1, 2, 3]


class Lists:
    """Lists below the top of a sample: numbers (a box), and one whose int64 item a float64 array would round
    (in sample `lossy` only, so that the workers' check, not only the first sample's, is what refuses it)."""

    def __init__(self, lossy=None, strings=False):
        self.lossy, self.strings = lossy, strings

    def __len__(self):
        return 8

    def __getitem__(self, i):
        item = np.int64(2**53 + 1) if i == self.lossy else np.int64(2**53 + 2)  # 2**53 + 2 is a float64
        sample = {"box": [i, 2.5, 3, 4], "mixed": [item, np.float32(0.5)]}
        if self.strings:
            sample["tags"] = ["a", "bc"]
        return sample


@pytest.mark.parametrize("workers", [0, 2])
def test_a_list_below_the_top_is_one_array_and_never_rounds_an_item(workers):
    batch = next(iter(sluice.Loader(dataset=Lists(), batch_size=4, workers=workers, format="numpy")))
    assert batch["box"].dtype == np.float64 and batch["box"][:, 0].tolist() == [0, 1, 2, 3]
    assert batch["mixed"].dtype == np.float64 and batch["mixed"][0].tolist() == [2**53 + 2, 0.5]
    for lossy in (0, 5):
        with pytest.raises(sluice.Error) as error:
            for _ in sluice.Loader(dataset=Lists(lossy=lossy), batch_size=4, workers=workers):
                pass
        text = str(error.value)
        assert "dataset[%d]['mixed'] is a list" % lossy in text and "float64" in text
        assert "changes its item 9007199254740993 into 9007199254740992.0" in text and "a tuple" in text
    with pytest.raises(sluice.Error, match=r"\['tags'\] is a list, which below the top of a sample is one array, "
                                           r"and NumPy makes it <U2, .*make it a tuple"):
        next(iter(sluice.Loader(dataset=Lists(strings=True), batch_size=4, workers=workers)))


class Unsigned:
    """Token ids as uint16, counts as uint32 and uint64 (the last past int64 at index 5)."""

    def __init__(self, past_int64=False):
        self.past_int64 = past_int64

    def __len__(self):
        return 8

    def __getitem__(self, i):
        big = np.uint64(2**63 + 1) if self.past_int64 and i == 5 else np.uint64(2**40 + i)
        return np.array([65535 - i, i], np.uint16), np.uint32(2**32 - 1 - i), big


@pytest.mark.skipif(getattr(torch, "uint16", None) is not None, reason="this torch has unsigned types of its own")
def test_format_torch_widens_the_unsigned_types_torch_lacks():
    for workers in (0, 2):
        ids, counts, big = next(iter(sluice.Loader(dataset=Unsigned(), batch_size=4, workers=workers, format="torch")))
        assert ids.dtype == torch.int32 and ids[:, 0].tolist() == [65535, 65534, 65533, 65532]
        assert counts.dtype == torch.int64 and counts.tolist() == [2**32 - 1 - j for j in range(4)]
        assert big.dtype == torch.int64 and big.tolist() == [2**40 + j for j in range(4)]
    loader = sluice.Loader(dataset=Unsigned(past_int64=True), batch_size=4, workers=1, format="torch")
    with pytest.raises(sluice.Error, match="field .* holds a uint64 value past int64's range.*format='numpy'"):
        list(loader)


def test_format_torch_feeds_a_model_and_releases_the_slot_with_the_last_tensor():
    loader = sluice.Loader(dataset=Counting(64), batch_size=8, workers=1, prefetch=2, format="torch")
    model = torch.nn.Linear(4, 2)
    kept = []
    it = iter(loader)
    for batch in it:
        assert isinstance(batch, dict)
        out = model(batch["x"])  # a tensor: no from_dlpack
        assert out.shape == (8, 2)
        kept.append(batch["x"])
        if len(kept) == 2:
            break
    # Both slots are held by the two tensors: a third batch cannot come...
    with pytest.raises(sluice.Error, match="held"):
        next(it)
    # ...until they go.
    kept.clear()
    gc.collect()
    assert isinstance(next(it)["x"], torch.Tensor)


def test_format_torch_is_zero_copy_into_the_arena():
    loader = sluice.Loader(dataset=Counting(32), batch_size=8, format="torch")
    base, size = loader.memory()
    for batch in loader:
        assert base <= batch["x"].data_ptr() < base + size


def test_format_numpy_of_a_tuple_sample_is_a_tuple_of_arrays():
    class Pairs:
        def __len__(self):
            return 8

        def __getitem__(self, i):
            return np.arange(3, dtype=np.float64) * i, i

    (x, y), = list(sluice.Loader(dataset=Pairs(), batch_size=8, format="numpy"))
    assert isinstance(x, np.ndarray) and x.dtype == np.float64 and x.shape == (8, 3)
    assert y.tolist() == list(range(8)) and y.dtype == np.int64


def test_format_torch_of_a_pipeline():
    batch = next(iter(sluice.Loader(pipeline("counting.lua"), format="torch")))
    assert isinstance(batch, dict) and all(isinstance(v, torch.Tensor) for v in batch.values())


def test_numpy_asarray_of_a_field_is_a_view_not_an_object_array():
    loader = sluice.Loader(dataset=Counting(16), batch_size=8)
    batch = next(iter(loader))
    a = np.asarray(batch["x"])
    assert a.dtype == np.float32 and a.shape == (8, 4)
    assert a.ctypes.data == batch["x"].data_ptr
    assert np.array_equal(a, np.from_dlpack(batch["x"]))
    assert np.array(batch["id"], dtype=np.float64).dtype == np.float64
    assert torch.as_tensor(np.asarray(batch["x"])).shape == (8, 4)


def test_the_default_format_keeps_todays_deliveries():
    batch = next(iter(sluice.Loader(dataset=Counting(16), batch_size=8)))
    assert isinstance(batch, sluice.Batch)


def test_an_unknown_format_is_refused():
    with pytest.raises(sluice.Error, match="format= is one of 'dlpack', 'torch', 'numpy'"):
        sluice.Loader(dataset=Counting(16), batch_size=8, format="jax")
