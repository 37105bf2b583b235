"""DataLoader's words: the dataset positional, num_workers, worker_init_fn,
prefetch_factor, timeout, persistent_workers, pin_memory, collate_fn; and
workers=0, every sample made in the calling process."""
import os

import numpy as np
import pytest
import torch

import sluice
from datasets import Counting, CrashOnce


class Augmented:
    """torch, NumPy and Python randomness, a nested sample, the pid that made it."""

    def __len__(self):
        return 30

    def __getitem__(self, i):
        import random
        return {"x": torch.rand(3).numpy(), "y": (i, np.random.rand(), random.random()), "pid": os.getpid()}


def flat(batch):
    """A batch (format='numpy') as comparable bytes, without the pid."""
    return (batch["x"].tobytes(), tuple(a.tobytes() for a in batch["y"]))


def run(workers, epochs=2, **options):
    loader = sluice.Loader(Augmented(), batch_size=4, shuffle=True, seed=5, workers=workers, format="numpy", **options)
    return [[flat(b) for b in loader] for _ in range(epochs)], loader


def test_the_dataset_may_be_the_first_positional_argument():
    batch = next(iter(sluice.Loader(Counting(16), batch_size=8)))
    assert np.from_dlpack(batch["x"]).shape == (8, 4)
    with pytest.raises(sluice.Error, match="a dataset twice"):
        sluice.Loader(Counting(16), dataset=Counting(16))


def test_workers_0_makes_the_batches_of_workers_2_in_this_process():
    inline, loader = run(0)
    assert inline == run(2)[0]
    assert loader.worker_pids() == []
    pids = {int(p) for b in loader for p in b["pid"]}  # a third epoch, unbounded
    assert pids == {os.getpid()}


def test_num_workers_0_is_workers_0_and_resumes_either_way():
    whole = [[flat(b) for b in sluice.Loader(Augmented(), batch_size=4, shuffle=True, seed=5, num_workers=2,
                                             format="numpy")] for _ in range(1)][0]
    first = sluice.Loader(Augmented(), batch_size=4, shuffle=True, seed=5, num_workers=0, format="numpy")
    head = []
    for b in first:
        head.append(flat(b))
        if len(head) == 3:
            break
    state = first.state_dict()
    second = sluice.Loader(Augmented(), batch_size=4, shuffle=True, seed=5, num_workers=2, format="numpy")
    second.load_state_dict(state)
    assert head + [flat(b) for b in second] == whole
    third = sluice.Loader(Augmented(), batch_size=4, shuffle=True, seed=5, num_workers=0, format="numpy")
    third.load_state_dict(state)
    assert head + [flat(b) for b in third] == whole


def test_workers_0_leaves_the_callers_generators_alone():
    torch.manual_seed(1)
    expected = torch.rand(2)
    loader = sluice.Loader(Augmented(), batch_size=4, workers=0)
    torch.manual_seed(1)
    next(iter(loader))
    assert torch.equal(torch.rand(2), expected)


def test_workers_0_errors_name_the_sample():
    class Bad(Counting):
        def __getitem__(self, i):
            if i == 5:
                raise ValueError("five")
            return super().__getitem__(i)

    with pytest.raises(ValueError, match="five"):  # the dataset's own exception, for pdb's post-mortem
        list(sluice.Loader(Bad(16), batch_size=4, workers=0))


def test_worker_init_fn_runs_in_each_worker():
    seen = {}

    def init(worker_id):
        seen["id"] = worker_id

    class WhoMadeIt(Counting):
        def __getitem__(self, i):
            return {"worker": seen.get("id", -1), "id": i}

    loader = sluice.Loader(WhoMadeIt(32), batch_size=4, num_workers=2, worker_init_fn=init, format="numpy")
    workers = {int(w) for b in loader for w in b["worker"]}
    assert workers == {0, 1}


def test_get_worker_info_is_dataloaders_in_each_worker():
    # PyTorch's own worker_init_fn pattern: info.dataset, info.id, info.num_workers, info.seed.
    def init(worker_id):
        info = torch.utils.data.get_worker_info()
        assert info.id == worker_id and info.dataset.n == 32
        info.dataset.opened_by = worker_id

    class Sharded(Counting):
        opened_by = -1

        def __getitem__(self, i):
            info = torch.utils.data.get_worker_info()
            if info is None:
                return {"worker": -1, "workers": 0, "opened": self.opened_by, "seed": 0}
            return {"worker": info.id, "workers": info.num_workers, "opened": self.opened_by, "seed": info.seed}

    loader = sluice.Loader(Sharded(32), batch_size=4, num_workers=2, worker_init_fn=init, seed=7, format="numpy")
    rows = {(int(w), int(n), int(o), int(s)) for b in loader for w, n, o, s in
            zip(b["worker"], b["workers"], b["opened"], b["seed"]) if w >= 0}
    assert rows == {(0, 2, 0, 7), (1, 2, 1, 8)}
    # workers=0: no worker, as DataLoader's num_workers=0 (sample 0's trial is made here too)
    inline = sluice.Loader(Sharded(8), batch_size=4, num_workers=0, format="numpy")
    assert {int(w) for b in inline for w in b["worker"]} == {-1}


def test_persistent_workers_false_forks_each_epochs_workers_from_the_program_as_it_is():
    class Curriculum(Counting):
        level = 0

        def set_epoch(self, epoch):
            self.level = epoch * 100

        def __getitem__(self, i):
            return {"level": self.level, "pid": os.getpid()}

    def levels_and_pids(**words):
        data = Curriculum(16)
        loader = sluice.Loader(data, batch_size=4, num_workers=2, shuffle=True, seed=3, format="numpy", **words)
        seen = []
        for epoch in range(3):
            data.set_epoch(epoch)  # as DataLoader users do before each epoch's loop
            rows = [(int(v), int(p)) for b in loader for v, p in zip(b["level"], b["pid"])]
            seen.append(({v for v, _ in rows}, {p for _, p in rows}, len(rows)))
        state = loader.state_dict()
        loader.close()
        return seen, state

    fresh, fresh_state = levels_and_pids(persistent_workers=False)
    assert [levels for levels, _, _ in fresh] == [{0}, {100}, {200}]
    assert [n for _, _, n in fresh] == [16, 16, 16]
    assert not (fresh[0][1] & fresh[1][1]) and not (fresh[1][1] & fresh[2][1])  # new workers each epoch
    kept, kept_state = levels_and_pids()  # persistent (the default): the workers' copy from the start
    assert [levels for levels, _, _ in kept] == [{0}, {0}, {0}]
    assert fresh_state == kept_state  # the same run, epoch for epoch
    with pytest.raises(sluice.OptionsError, match="persistent_workers= is True or False"):
        sluice.Loader(Counting(8), persistent_workers="yes")


def test_dataloaders_attributes_are_there_for_evaluation_code():
    data = Counting(20)
    for workers in (0, 2):
        loader = sluice.Loader(data, batch_size=8, num_workers=workers, drop_last=True)
        assert loader.dataset is data and len(loader.dataset) == 20
        assert (loader.batch_size, loader.num_workers, loader.drop_last, len(loader)) == (8, workers, True, 2)


def test_prefetch_factor_is_batches_per_worker():
    loader = sluice.Loader(Counting(32), batch_size=4, num_workers=2, prefetch_factor=3)
    assert loader.slots == 3 * 2 + 2
    with pytest.raises(sluice.Error, match="prefetch_factor= needs a number of workers"):
        sluice.Loader(Counting(32), batch_size=4, workers="auto", prefetch_factor=3)


def test_prefetch_factor_with_a_pipeline_that_sets_its_workers(tmp_path):
    script = tmp_path / "p.lua"
    script.write_text("local sluice = require('sluice')\n"
                      "return sluice.pipeline { source = sluice.range(64), batch_size = 4, workers = 3,\n"
                      "  fields = { { 'i', 'int64' } }, map = function(i) return { i = i } end }\n")
    # Per worker, as DataLoader's: the script's 3 workers are not the 2 it would assume, so it asks for num_workers=.
    with pytest.raises(sluice.Error, match=r"prefetch_factor= is per worker, and .*p\.lua sets workers = 3: "
                                           r"give num_workers= with it"):
        sluice.Loader(script, prefetch_factor=3)
    with sluice.Loader(script, prefetch_factor=3, num_workers=3) as loader:
        assert loader.slots == 3 * 3 + 2
        assert sum(len(b["i"]) for b in loader) == 64


def test_values_dataloader_refuses_are_refused_in_its_words(tmp_path):
    for bad in (0, -1, 1.5, True):
        with pytest.raises(sluice.Error, match=r"prefetch_factor= is the batches each worker keeps ready, an int of 1 or more"):
            sluice.Loader(Counting(32), batch_size=4, num_workers=2, prefetch_factor=bad)
    for bad in (-1, "5"):
        with pytest.raises(sluice.Error, match=r"timeout= is seconds, 0 or more"):
            sluice.Loader(Counting(32), batch_size=4, num_workers=2, timeout=bad)
    script = tmp_path / "p.lua"
    script.write_text("local sluice = require('sluice')\n"
                      "return sluice.pipeline { source = sluice.range(8), batch_size = 4,\n"
                      "  fields = { { 'i', 'int64' } }, map = function(i) return { i = i } end }\n")
    # A pipeline's workers run Lua: a Python worker_init_fn would never be called there.
    with pytest.raises(sluice.Error, match=r"worker_init_fn= is for Python datasets: a pipeline.lua's workers run Lua"):
        sluice.Loader(script, worker_init_fn=lambda worker_id: None)
    with pytest.raises(sluice.Error, match=r"worker_init= is for Python datasets"):
        sluice.Loader(script, worker_init=lambda worker_id: None)


def test_timeout_replaces_a_hung_worker(tmp_path):
    loader = sluice.Loader(CrashOnce(17, tmp_path / "hung", "hang"), batch_size=4, num_workers=2, timeout=1,
                           persistent_workers=True, pin_memory=True)
    assert sorted(int(i) for _ in range(1) for b in loader for i in b.sample_ids) == list(range(40))
    assert loader.stats()["worker_restarts"] >= 1


def test_collate_fn_says_why_not_and_default_collate_is_what_sluice_does():
    with pytest.raises(sluice.Error, match="no list of samples to collate"):
        sluice.Loader(Counting(16), batch_size=4, collate_fn=lambda samples: samples)
    from torch.utils.data import default_collate
    assert len(sluice.Loader(Counting(16), batch_size=4, collate_fn=default_collate)) == 4
    with pytest.raises(sluice.Error, match="sampler=: Sluice plans each epoch itself"):
        sluice.Loader(Counting(16), batch_size=4, sampler=range(16))


def test_pin_memory_page_locks_the_arena_where_cuda_is():
    with pytest.raises(sluice.Error, match="pin_memory_device='mps'"):
        sluice.Loader(Counting(8), pin_memory=True, pin_memory_device="mps")
    loader = sluice.Loader(Counting(32), batch_size=4, num_workers=2, pin_memory=True, format="torch")
    if not torch.cuda.is_available():
        with pytest.warns(RuntimeWarning, match="no CUDA device here: the loader's arena stays pageable"):
            batch = next(iter(loader))
        assert not batch["x"].is_pinned()
        loader.close()
        pytest.skip("no CUDA device: the page-locked path ran its fallback only (the warning above)")
    batch = next(iter(loader))
    assert batch["x"].is_pinned()
    assert torch.equal(batch["x"].cuda(non_blocking=True).cpu(), batch["x"])
    loader.close()
