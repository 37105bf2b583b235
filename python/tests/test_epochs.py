"""Each `for` over a loader is one epoch, for as many epochs as the program loops."""
import json

import numpy as np
import pytest

import sluice
from conftest import pipeline
from datasets import Counting


def epoch_ids(loader):
    """One loop: [(epoch, sample ids)] per batch."""
    return [(b.epoch, tuple(int(i) for i in b.sample_ids)) for b in loader]


def test_ten_loops_are_ten_epochs_of_a_python_dataset():
    loader = sluice.Loader(dataset=Counting(100), batch_size=8, shuffle=True, seed=2, workers=2)
    assert len(loader) == 13  # batches of one epoch, the last one short
    orders = []
    for epoch in range(10):
        batches = epoch_ids(loader)
        assert len(batches) == len(loader)
        assert {e for e, _ in batches} == {epoch}
        ids = [i for _, batch in batches for i in batch]
        assert sorted(ids) == list(range(100))  # each sample once per epoch
        orders.append(ids)
    assert len({tuple(o) for o in orders}) == 10  # shuffled anew each epoch
    assert not loader.finished


def test_a_loop_left_mid_epoch_resumes_from_state_dict_exactly():
    options = dict(batch_size=8, shuffle=True, seed=4)
    whole = sluice.Loader(dataset=Counting(100), workers=2, **options)
    expected = [epoch_ids(whole) for _ in range(4)]

    first = sluice.Loader(dataset=Counting(100), workers=2, **options)
    got = [epoch_ids(first)]
    head = []
    for batch in first:  # epoch 1, left after 5 batches
        head.append((batch.epoch, tuple(int(i) for i in batch.sample_ids)))
        if len(head) == 5:
            break
    state = first.state_dict()
    first.close()

    resumed = sluice.Loader(dataset=Counting(100), workers=3, **options)
    resumed.load_state_dict(state)
    got.append(head + epoch_ids(resumed))  # the rest of epoch 1
    got += [epoch_ids(resumed), epoch_ids(resumed)]
    assert got == expected


@pytest.mark.parametrize("workers", [0, 2])
def test_a_loop_left_early_ends_its_epoch_and_the_next_loop_is_a_whole_one(workers):
    # As with DataLoader: break (or a peek with next(iter(loader))) ends the
    # epoch; the same iterator object goes on within it.
    def ids(batch):
        return tuple(int(i) for i in np.asarray(batch["id"]).ravel())

    options = dict(batch_size=8, shuffle=True, seed=3)
    whole = sluice.Loader(dataset=Counting(100), workers=2, **options)
    expected = [[ids(b) for b in whole] for _ in range(4)]
    loader = sluice.Loader(dataset=Counting(100), workers=workers, **options)
    for k, batch in enumerate(loader):
        if k == 2:
            break
    del batch
    assert [ids(b) for b in loader] == expected[1]  # epoch 1 whole, not the rest of epoch 0
    assert ids(next(iter(loader))) == expected[2][0]  # a peek at epoch 2
    it = iter(loader)  # epoch 3, taken in two loops over the same iterator
    got = [ids(next(it)) for _ in range(3)]
    got += [ids(b) for b in it]
    assert got == expected[3]
    assert loader.epoch == 4


def test_a_second_loop_begun_inside_a_loop_warns_that_the_first_ends():
    # DataLoader gives each iterator its own stream; a Loader is one stream,
    # which a new loop takes over: said, not left to surprise.
    loader = sluice.Loader(dataset=Counting(64), batch_size=8, workers=2)
    with pytest.warns(RuntimeWarning, match="a new loop over this loader began while another was going on"):
        for k, batch in enumerate(loader):
            if k == 1:
                next(iter(loader))
    with pytest.warns(RuntimeWarning, match="make a second sluice.Loader for a second stream"):
        for pair in zip(loader, loader):
            del pair
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a finished loop, and a loop after a break, are not a second one
        for _ in loader:
            pass
        for _ in loader:
            break
        del _
        next(iter(loader))
    loader.close()


def test_a_run_record_goes_on_across_a_loop_left_early(tmp_path):
    record = tmp_path / "run.jsonl"
    loader = sluice.Loader(dataset=Counting(40), batch_size=8, workers=1, record=record)
    assert len(epoch_ids(loader)) == 5
    for k, _ in enumerate(loader):
        if k == 1:
            break
    assert len(epoch_ids(loader)) == 5  # epoch 2, with fresh workers
    loader.close()
    lines = [json.loads(line) for line in record.read_text().splitlines()]
    epochs = [line["epoch"] for line in lines if "batch" in line and "epoch" in line]
    assert epochs == [0] * 5 + [1] * 2 + [2] * 5  # nothing of epochs 0 and 1 lost


def test_dataloaders_worker_init_fn_is_not_called_without_workers():
    called = []
    loader = sluice.Loader(Counting(8), batch_size=4, num_workers=0, worker_init_fn=called.append)
    assert len(list(loader)) == 2 and called == []  # as DataLoader's num_workers=0


def test_an_epochs_bound_still_ends_the_run_and_a_loop_past_it_warns():
    loader = sluice.Loader(dataset=Counting(40), batch_size=8, epochs=2)
    assert [len(epoch_ids(loader)) for _ in range(2)] == [5, 5]
    assert loader.finished
    with pytest.warns(RuntimeWarning, match="epochs=2 are over"):
        assert list(loader) == []


def test_a_pipeline_keeps_its_own_epochs_and_says_when_they_are_over():
    loader = sluice.Loader(pipeline("counting.lua"), epochs=1)
    assert len(epoch_ids(loader)) == len(loader)
    with pytest.warns(RuntimeWarning, match="epochs=0 loops"):
        assert list(loader) == []


def test_the_issues_loop_yields_every_epoch():
    loader = sluice.Loader(dataset=Counting(32), batch_size=4, workers=2)
    counts = [sum(len(np.from_dlpack(b["x"])) for b in loader) for _ in range(10)]
    assert counts == [32] * 10
