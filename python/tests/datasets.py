"""Small Python datasets for the tests of sluice.Loader(dataset=/sequence=/fill=).

Module level, so that a forked worker finds them as the host had them."""
import gc
import os
import time

import numpy as np

import sluice


class Counting:
    """Sample i: x = 10 * i + [0, 1, 2, 3] (float32), id = i."""

    def __init__(self, n=100):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return {"x": (10.0 * i + np.arange(4)).astype(np.float32), "id": i}


def counting_ok(x, ids):
    return np.array_equal(x, (10.0 * ids[:, None] + np.arange(4)[None, :]).astype(np.float32))


class Broken(Counting):
    """Raises for samples 13 and 57."""

    def __getitem__(self, i):
        if i in (13, 57):
            raise ValueError("sample %d is broken" % i)
        return super().__getitem__(i)


class Reshaped(Counting):
    """Sample `bad` has another shape (shape=True) or dtype (shape=False)."""

    def __init__(self, bad, shape):
        super().__init__()
        self.bad, self.shape = bad, shape

    def __getitem__(self, i):
        sample = super().__getitem__(i)
        if i == self.bad:
            sample["x"] = np.zeros(5, np.float32) if self.shape else sample["x"].astype(np.float64)
        return sample


class Pairs(Counting):
    def __getitem__(self, i):
        sample = super().__getitem__(i)
        return sample["x"], np.int32(i)


class Random(Counting):
    def __getitem__(self, i):
        return {"r": sluice.rng().random(3), "id": i}


class CrashOnce(Counting):
    """The first time sample `bad` is made, its worker exits (`marker` remembers it)."""

    def __init__(self, bad, marker, how="exit"):
        super().__init__(40)
        self.bad, self.marker, self.how = bad, str(marker), how

    def __getitem__(self, i):
        if i == self.bad and not os.path.exists(self.marker):
            open(self.marker, "w").close()
            if self.how == "hang":
                time.sleep(60)
            os._exit(3)
        return super().__getitem__(i)


class CrashAlways(Counting):
    def __getitem__(self, i):
        if i == 5:
            os._exit(3)
        return super().__getitem__(i)


class Batches:
    """Keras-style: batch b of `rows` rows, x = b + row / 100, y = 10 * b + row; the last is short."""

    def __init__(self, count=5, rows=4, last=2):
        self.count, self.rows, self.last = count, rows, last

    def __len__(self):
        return self.count

    def __getitem__(self, b):
        n = self.last if b == self.count - 1 else self.rows
        x = (b + np.arange(n)[:, None] / 100.0 + np.zeros((n, 3))).astype(np.float32)
        return x, 10 * b + np.arange(n)


class Collecting(Counting):
    """Runs the garbage collector in the worker before every sample: it frees
    whatever garbage the worker inherited from the host, tensors included."""

    def __getitem__(self, i):
        gc.collect()
        return super().__getitem__(i)
