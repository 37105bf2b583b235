"""sluice.settings(): the one table of run settings, as Loader takes them."""
import pytest

import sluice
from datasets import Counting


def typed(text):
    """A setting's default as Python passes it: True, 4, "skip"."""
    if text in ("true", "false"):
        return text == "true"
    return int(text) if text.isdigit() else text


def test_settings_are_named_tuples_of_text():
    table = sluice.settings()
    names = [name for name, _, _, _ in table]
    assert names[:2] == ["epochs", "workers"] and len(set(names)) == len(names)
    assert "worker_memory_mb" in names and "prefetch" in names
    for name, takes, default, help in table:
        assert name and takes and help, name


@pytest.mark.parametrize("name,takes,default,help", sluice.settings())
def test_loader_takes_each_setting_at_its_default(name, takes, default, help):
    if not default:
        pytest.skip("%s is unset by default" % name)
    for value in (default, typed(default)):
        loader = sluice.Loader(dataset=Counting(8), **{name: value})
        info = loader.info
        if name in info:
            assert info[name] == typed(default), name
        loader.close()
    with pytest.raises(sluice.Error, match=name + " expects "):
        sluice.Loader(dataset=Counting(8), **{name: "bogus"})


def test_info_and_stats_come_whole():
    loader = sluice.Loader(dataset=Counting(8), batch_size=4, workers=1, epochs=1, worker_memory_mb=512,
                           prefetch=3, on_error="skip")
    info = loader.info
    assert (info["batch_size"], info["workers"], info["epochs"]) == (4, 1, 1)
    assert (info["worker_memory_mb"], info["prefetch"], info["on_error"]) == (512, 3, "skip")
    assert info["shuffle"] is False and info["dataset_size"] == 8
    assert sum(1 for _ in loader) == 2
    stats = loader.stats()
    assert (stats["batches_delivered"], stats["samples_delivered"]) == (2, 8)
    assert stats["skipped_samples"] == [] and stats["skip_reasons"] == [] and stats["workers"] == 1
    assert isinstance(stats["autotune"], str)
    loader.close()
