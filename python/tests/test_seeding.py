"""Python datasets: the global generators (torch, NumPy's legacy state, Python's
random) are seeded per sample from (seed, epoch, index), as sluice.rng() is."""
import random

import numpy as np
import pytest
import torch

import sluice


class TorchDraw:
    """The issue's dataset: torch.rand in __getitem__."""

    def __len__(self):
        return 32

    def __getitem__(self, i):
        return np.array([torch.rand(1).item()])


class Draws:
    """One draw from each global generator, and the sample's index."""

    def __init__(self, n=48):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return {"draws": np.array([torch.rand(1).item(), np.random.rand(), random.random()]), "id": i}


def draws_by_sample(loader, epochs=1):
    """{(epoch, id): the sample's three draws} over `epochs` loops (one epoch each)."""
    out = {}
    for _ in range(epochs):
        for batch in loader:
            ids = np.from_dlpack(batch["id"]).copy()
            draws = np.from_dlpack(batch["draws"]).copy()
            for i, d in zip(ids, draws):
                out[(batch.epoch, int(i))] = tuple(d)
    return out


def test_torch_draws_differ_across_workers_and_samples():
    batches = [np.from_dlpack(x).copy().ravel() for x in sluice.Loader(dataset=TorchDraw(), batch_size=4, workers=2)]
    assert len(batches) == 8
    assert not np.array_equal(batches[0], batches[1])  # worker 0's batch 0, worker 1's batch 1
    assert len(set(np.concatenate(batches).tolist())) == 32  # every sample its own draw


def test_every_generator_is_keyed_by_the_sample_not_by_the_worker():
    runs = {}
    for workers in (1, 2, 3):
        loader = sluice.Loader(dataset=Draws(), batch_size=4, shuffle=True, seed=7, epochs=2, workers=workers)
        runs[workers] = draws_by_sample(loader, epochs=2)
    assert len(runs[1]) == 96
    assert runs[1] == runs[2] == runs[3]
    values = list(runs[1].values())
    for g in range(3):  # each generator gives each sample its own draw
        assert len({v[g] for v in values}) == len(values)
    # The generators are seeded apart: random.random() is not numpy.random.rand().
    assert all(v[1] != v[2] for v in values)
    # Another seed, other draws; another epoch, other draws for the same sample.
    other = draws_by_sample(sluice.Loader(dataset=Draws(), batch_size=4, shuffle=True, seed=8, epochs=1, workers=2))
    assert all(other[key] != runs[1][key] for key in other)
    assert all(runs[1][(0, i)] != runs[1][(1, i)] for i in range(48))


def test_draws_after_a_resume_are_those_of_the_uninterrupted_run():
    options = dict(batch_size=4, shuffle=True, seed=3, epochs=2, workers=2)
    whole = draws_by_sample(sluice.Loader(dataset=Draws(), **options), epochs=2)
    first = sluice.Loader(dataset=Draws(), **options)
    seen = {}
    for k, batch in enumerate(first):
        ids, draws = np.from_dlpack(batch["id"]), np.from_dlpack(batch["draws"])
        seen.update({(batch.epoch, int(i)): tuple(d) for i, d in zip(ids, draws)})
        del ids, draws, batch
        if k == 4:
            break
    state = first.state_dict()
    first.close()
    resumed = sluice.Loader(dataset=Draws(), **dict(options, workers=3))
    resumed.load_state_dict(state)
    seen.update(draws_by_sample(resumed))  # the rest of epoch 0
    seen.update(draws_by_sample(resumed))  # epoch 1
    assert seen == whole


def test_making_a_loader_leaves_the_host_generators_as_they_were():
    torch.manual_seed(0)
    np.random.seed(0)
    random.seed(0)
    expected = (torch.rand(1).item(), np.random.rand(), random.random())
    torch.manual_seed(0)
    np.random.seed(0)
    random.seed(0)
    sluice.Loader(dataset=Draws(), batch_size=4)  # makes dataset[0] here, seeded as a worker would
    assert (torch.rand(1).item(), np.random.rand(), random.random()) == expected


def test_seed_globals_false_leaves_the_workers_copies_of_the_host_state():
    loader = sluice.Loader(dataset=TorchDraw(), batch_size=4, workers=2, seed_globals=False)
    batches = [np.from_dlpack(x).copy().ravel() for x in loader]
    assert np.array_equal(batches[0], batches[1])  # the defect, kept on request


def test_torchvision_augmentations_differ_per_sample_and_not_per_worker_count():
    transforms = pytest.importorskip("torchvision.transforms")
    augment = transforms.Compose([transforms.RandomResizedCrop(8, antialias=True), transforms.RandomHorizontalFlip()])
    image = torch.arange(3 * 32 * 32, dtype=torch.float32).reshape(3, 32, 32)

    class Augmented:
        def __len__(self):
            return 24

        def __getitem__(self, i):
            return {"image": augment(image).numpy(), "id": i}

    def images(workers):
        out = {}
        for batch in sluice.Loader(dataset=Augmented(), batch_size=4, shuffle=True, seed=1, workers=workers):
            for i, x in zip(np.from_dlpack(batch["id"]), np.from_dlpack(batch["image"])):
                out[int(i)] = x.tobytes()
        return out

    one, three = images(1), images(3)
    assert one == three
    assert len(set(one.values())) == 24  # no two samples cropped and flipped alike
