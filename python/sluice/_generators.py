"""The global random generators a dataset may draw from (Python's random,
NumPy's legacy global state, torch's default CPU generator), seeded per sample
as a worker seeds them (python/src/global_seeds.h), and kept: a sample made in
this process (the first, to learn the fields; every one with workers=0) leaves
the host's generators as they were, so a model's initialisation or dropout
draws the same numbers with or without a Loader."""
import contextlib
import sys

from ._sluice import _seed_globals


def _states():
    """(restore, state) of each global generator imported now."""
    states = []
    random = sys.modules.get("random")
    if random is not None:
        states.append((random.setstate, random.getstate()))
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        states.append((numpy.random.set_state, numpy.random.get_state()))
    torch = sys.modules.get("torch")
    if torch is not None and hasattr(torch, "get_rng_state"):
        states.append((torch.set_rng_state, torch.get_rng_state()))
    return states


@contextlib.contextmanager
def kept():
    """Restores the global generators' states on leaving (an exception included)."""
    states = _states()
    try:
        yield
    finally:
        for restore, state in states:
            restore(state)


def seed_sample(seed, epoch, index):
    """Seeds the global generators for sample `index` of `epoch`, as a worker does."""
    _seed_globals(seed, epoch, index)
