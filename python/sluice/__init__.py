"""Sluice from Python: pipeline.lua batches as zero-copy PyTorch and NumPy tensors.

    import sluice, torch

    loader = sluice.Loader("examples/quickstart.lua", workers=4, epochs=3)
    for epoch in range(3):
        for batch in loader:                          # one epoch per pass
            x = torch.from_dlpack(batch["image"])     # no copy: the batch's slot in shared memory
            y = torch.from_dlpack(batch["label"])
            ...

Batches come from forked worker processes that fill slots of a shared-memory
arena in place. A Batch maps field names to Arrays that implement the DLPack
protocol; torch.from_dlpack and numpy.from_dlpack adopt their memory without a
copy. The slot returns to the loader when the Batch and every Array and tensor
made from it are gone (or at batch.release(), for the Batch's own hold).

Errors from the runtime, a worker or a Lua map raise sluice.Error with the
messages `sluice run` prints. Ctrl-C raises KeyboardInterrupt within 50 ms.
"""

import atexit
import json
import os
import weakref

from ._sluice import Array, Batch, Error, _Loader, check_state as _check_state, merge_states as _merge_states

__all__ = ["Array", "Batch", "Error", "Loader", "DEFAULT_HELD_TIMEOUT_MS"]
__version__ = "0.1.0"

# How long the next batch waits when the program holds every slot of the arena
# (Batches, Arrays or tensors made from them all alive) before it raises
# sluice.Error saying so. The C++ default is 5000 ms, for hosts that release
# batches on other threads; a Python training loop holds and frees its batches
# on the one thread that waits, so a wait rarely ends well and 1 s is plenty.
# held_timeout_ms=... overrides it.
DEFAULT_HELD_TIMEOUT_MS = 1000

_STATE_KEY = "sluice_loader_state"
_STATE_FORMAT = 1

_open_loaders = weakref.WeakSet()


def _setting_text(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class Loader:
    """Runs a pipeline.lua through worker processes and yields its batches.

    Loader(path, record=None, **overrides)

    overrides are the settings of `sluice run` (the same names, '-' or '_'):
    epochs, workers, prefetch, seed, on_error, batch_size, drop_last, shuffle,
    ordered, rank, world_size, max_retries, batch_timeout_ms, worker_memory_mb,
    held_timeout_ms (default here: DEFAULT_HELD_TIMEOUT_MS), skip_fill, device
    ("cpu" or "auto": this build delivers host memory). An unknown name or a bad
    value raises sluice.Error. record= writes a run record (JSON lines, as
    `sluice run --record`), comparable with `sluice verify`.

    The script is loaded (and its sample 0 made) here; the workers start at
    the first iteration, state_dict() or load_state_dict().

    Iterating yields the batches of the current epoch: a loop over the loader
    is one epoch, and the next loop continues with the next one (a loop left
    early continues the same epoch). len(loader) is the batches per epoch.
    """

    def __init__(self, path, record=None, **overrides):
        settings = [(name, _setting_text(value)) for name, value in overrides.items()]
        if not any(name.replace("-", "_") == "held_timeout_ms" for name in overrides):
            settings.append(("held_timeout_ms", str(DEFAULT_HELD_TIMEOUT_MS)))
        self._core = _Loader(os.fspath(path), settings, os.fspath(record) if record is not None else "")
        self._info = self._core.info()
        self._closed = False
        self.resume_note = None  # set by load_state_dict() from several ranks' states
        _open_loaders.add(self)

    # --- Iteration ----------------------------------------------------------
    def __len__(self):
        return self._core.batches_per_epoch()

    def __iter__(self):
        """The batches of the current epoch (an iterator that survives
        KeyboardInterrupt and sluice.Error: iterate it again to go on)."""
        return self._started().epoch_iter()

    def _started(self):
        if self._closed:
            raise Error("the loader has been closed")
        if not self._core.started():
            self._core.start(None)
        return self._core

    # --- Checkpoints (torchdata StatefulDataLoader style) -------------------
    def state_dict(self):
        """Where the run stands, as a dict of plain values (torch.save-able).

        A Loader of the same pipeline given it by load_state_dict() delivers
        exactly the batches this one would deliver next, whatever its worker
        count, prefetch or ordering.
        """
        state = json.loads(self._started().state_json())
        return {_STATE_KEY: state, "format": _STATE_FORMAT}

    def load_state_dict(self, state_dict):
        """Continues from state_dict(): restarts the workers at its position.

        A list of the state_dict()s of every rank of a distributed run (any
        order) is merged into the run's global position, which resumes on any
        world size with the same global batch (batch_size x world_size), from
        the slowest rank's step; self.resume_note says where and how many
        per-rank batches come again.

        Raises sluice.Error if it is not a state or belongs to another plan
        (seed, dataset size, batch size, shuffle, drop_last or shard differ),
        or if the list is not exactly one state per rank.
        """
        if self._closed:
            raise Error("the loader has been closed")
        if isinstance(state_dict, (list, tuple)):
            if not state_dict:
                raise Error("load_state_dict: an empty list of states")
            text, self.resume_note = _merge_states([_state_text(s) for s in state_dict])
        else:
            text = _state_text(state_dict)
            _check_state(text)
            self.resume_note = None
        self._core.start(text)

    # --- What it did --------------------------------------------------------
    def stats(self):
        """A dict mirroring sluice::Stats, with skipped_samples and skip_reasons."""
        return self._started().stats()

    @property
    def epoch(self):
        """The epoch of the next batch (== epochs when the run is over)."""
        return self._started().current_epoch()

    @property
    def finished(self):
        return self._started().finished()

    def memory(self):
        """(address, size) of the shared-memory arena every batch lives in."""
        return self._started().memory()

    def worker_pids(self):
        return self._started().worker_pids()

    @property
    def slots(self):
        """Batch slots of the arena: batches prefetched or held at once."""
        return self._started().slots()

    @property
    def info(self):
        """The pipeline as loaded: path, fields, batch_size, epochs, workers, ..."""
        return dict(self._info)

    @property
    def batch_size(self):
        return self._info["batch_size"]

    # --- Lifetime -----------------------------------------------------------
    def close(self):
        """Stops the workers and completes the run record. Batches and tensors
        still alive stay valid; the loader can no longer be used."""
        self._closed = True
        self._core.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return "<sluice.Loader %s: %d batches of %d per epoch>" % (
            self._info["path"], len(self), self._info["batch_size"])


def _state_text(state_dict):
    """The loader state's JSON inside one state_dict(), checked for shape."""
    if not isinstance(state_dict, dict) or _STATE_KEY not in state_dict:
        raise Error("load_state_dict expects a dict from sluice.Loader.state_dict() (with the key '"
                    + _STATE_KEY + "'), or a list of them")
    if state_dict.get("format") != _STATE_FORMAT:
        raise Error("load_state_dict: state format %r, this sluice reads %d"
                    % (state_dict.get("format"), _STATE_FORMAT))
    return json.dumps(state_dict[_STATE_KEY])


@atexit.register
def _close_all():
    # Stop the workers before the interpreter tears down; they would also go
    # with the process, but this reaps them in order.
    for loader in list(_open_loaders):
        try:
            loader.close()
        except Exception:
            pass
