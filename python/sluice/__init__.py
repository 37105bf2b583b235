"""Sluice from Python: zero-copy PyTorch and NumPy batches from a pipeline.lua
or from a Python dataset run in forked workers.

    import sluice, torch

    loader = sluice.Loader("examples/quickstart.lua", workers=4, epochs=3)
    for epoch in range(3):
        for batch in loader:                          # one epoch per pass
            x = torch.from_dlpack(batch["image"])     # no copy: the batch's slot in shared memory
            y = torch.from_dlpack(batch["label"])
            ...

    loader = sluice.Loader(dataset=ds, batch_size=256, shuffle=True, workers=4)   # ds[i] -> dict or tuple
    loader = sluice.Loader(sequence=seq, shuffle=True, workers=2)                 # seq[b] -> a whole batch
    loader = sluice.Loader(fill=fn, size=n, fields={...}, batch_size=256)         # fn(i, out) writes in place

Batches come from forked worker processes that fill slots of a shared-memory
arena in place. A Batch maps field names to Arrays that implement the DLPack
protocol; torch.from_dlpack and numpy.from_dlpack adopt their memory without a
copy. The slot returns to the loader when the Batch and every Array and tensor
made from it are gone (or at batch.release(), for the Batch's own hold).

Errors from the runtime, a worker or a Lua map raise sluice.Error with the
messages `sluice run` prints; a setting or option the runtime refuses raises
sluice.OptionsError, a sluice.Error that is also a ValueError. Ctrl-C raises
KeyboardInterrupt within 50 ms.

Python datasets (dataset=, sequence=, fill=) run in forked copies of this
interpreter: see Loader and rng() for what a worker may do.
"""

import atexit
import json
import os
import sys
import warnings
import weakref

from ._sluice import Array, Batch, Error, OptionsError, _Loader, check_state as _check_state, merge_states as _merge_states
from ._sluice import _current_sample, _dataset_loader, _trial, settings
from . import _compat, _generators, _inline, _pinning, _structure, _trial_child

__all__ = ["Array", "Batch", "Error", "OptionsError", "Loader", "rng", "settings", "write", "DEFAULT_HELD_TIMEOUT_MS"]
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


def rng():
    """The NumPy Generator of the sample being made, for per-sample randomness.

    Call it in a dataset's __getitem__, a sequence's __getitem__ or a fill
    function while sluice makes a sample: it is
    numpy.random.default_rng([seed, epoch, index]) (index: the dataset index,
    or a sequence's batch index), so augmentation depends on the Loader's seed,
    the epoch and the sample only, never on the worker count, the worker that
    made it or a crash and retry. Raises sluice.Error anywhere else.
    """
    import numpy as np
    current = _current_sample()
    if current is None:
        raise Error("sluice.rng() is for a dataset's __getitem__ or a fill function while sluice makes a sample")
    return np.random.default_rng(list(current))


# How many samples the host's trial tries with on_error="skip" (as for a pipeline.lua).
_TRIAL_SAMPLES = 16


def _default(name):
    """A run setting's default, as the settings table declares it (text)."""
    return next(default for setting, _, default, _ in settings() if setting == name)


def _format_exception(error):
    """As a worker reports it: the exception's line, then its traceback."""
    import traceback
    summary = "".join(traceback.format_exception_only(type(error), error)).rstrip("\n")
    trace = "".join(traceback.format_exception(type(error), error, error.__traceback__)).rstrip("\n")
    return summary + "\n" + trace


def _first(source, kind, on_error, seed, seed_globals, in_child, timeout_s):
    """The first sample (or batch) the workers will not skip, made here, with
    the global generators seeded as a worker seeds them and restored after.
    in_child: each is made in a forked child first (_trial_child), and here
    only when the child got through; timeout_s bounds the child (None: no bound)."""
    tries = min(len(source), _TRIAL_SAMPLES if on_error == "skip" else 1)
    errors = []

    def make(index):
        _trial(True, seed, index)
        try:
            with _generators.kept():
                if seed_globals:
                    _generators.seed_sample(seed, 0, index)
                return source[index]
        finally:
            _trial(False, 0, 0)

    for index in range(tries):
        ended = _trial_child.ends_child(lambda: make(index), timeout_s) if in_child else ""
        if ended:
            errors.append("%s[%d] ended the process that made it (the first sample is made once here, to learn "
                          "the fields, and in a child process first): it %s" % (kind, index, ended))
            continue
        try:
            return index, make(index)
        except Exception as error:
            errors.append("%s[%d] raised %s" % (kind, index, _format_exception(error)))
    raise Error("\n".join(errors) if len(errors) == 1 else
                "the first %d samples all failed; the first:\n%s" % (len(errors), errors[0]))


class Loader:
    """Runs a pipeline.lua through worker processes and yields its batches.

    Loader(path, record=None, **overrides)

    overrides are the settings of sluice.settings() (name, what it takes,
    default, help), the same names as `sluice run`'s options ('-' or '_');
    held_timeout_ms defaults here to DEFAULT_HELD_TIMEOUT_MS. An unknown name
    or a bad value raises sluice.OptionsError (a sluice.Error and a
    ValueError). record= writes a run record (JSON lines, as `sluice run
    --record`), comparable with `sluice verify`.

    The script is loaded (and its sample 0 made) here; the workers start at
    the first iteration, state_dict() or load_state_dict().

    Iterating yields the batches of the current epoch: a loop over the loader
    is one epoch, and the next loop continues with the next one. A loop its
    consumer left early (break, an exception in its body, a peek with
    next(iter(loader))) ends its epoch there, as with DataLoader: the next
    `for` starts the next epoch whole. A loop the loader left (a sluice.Error
    it raised, Ctrl-C while it waited for a batch) goes on where it stopped,
    as do the same iterator object and the first loop after
    load_state_dict(). len(loader) is the batches per epoch.
    A Python dataset's loader has no bound unless epochs= gives one (it is
    epochs=0, until closed): `for epoch in range(n): for batch in loader:`
    makes n epochs. A pipeline.lua's epochs bound its loader; a loop after
    the last epoch yields nothing, with a RuntimeWarning saying so.

    Python datasets, with the same settings (those of sluice.settings()),
    record= and everything below:

    Loader(dataset=ds, fields=None, worker_init=None, **settings)
        ds is map-style: len(ds) samples, ds[index] returns a dict (a Batch
        of those names is yielded), a tuple (a tuple of Arrays) or a single
        array (an Array) of NumPy arrays or scalars. Each sample is written
        straight into the batch's slot in shared memory: no collation, no
        pickling. Fields, dtypes and shapes come from ds[0], made here (or
        from fields={"name": (dtype, shape)}, then ds[0] is not made here);
        a later sample that differs is an error naming it.
        A str, bytes or (with ragged={"name": room}) an array whose first
        dimension varies arrives as a list of str / bytes / views, carried
        in the slot padded to its room per sample (docs/python.md).
    Loader(sequence=seq, ...)
        Keras-style: seq[b] returns batch b whole (a tuple (x, y) of arrays,
        say); len(seq) batches per epoch, in order or shuffled (shuffle=True),
        yielded as seq[b] is shaped: a tuple of Arrays for a tuple. A batch
        may have fewer rows than seq[0] (a short last batch); fields=
        declares (dtype, (rows, ...)) instead of making seq[0] here.
    Loader(fill=fn, size=n, fields={...}, ...)
        No copy at all: fn(index, out) writes sample `index` into out[name],
        NumPy views of its rows of the slot (write every element: a slot is
        reused). Yields Batches.

    The workers are forked copies of this interpreter, made when the loader
    starts (its first batch, state_dict() or load_state_dict()). What this
    process imported and loaded is there; its threads are not (torch's
    thread pools included): do not call torch in a dataset, or set
    torch.set_num_threads(1) in worker_init(worker_id), which runs once in
    each worker. A Python exception in a worker raises sluice.Error here with
    the worker's traceback and the sample's index, subject to on_error; a
    worker that crashes or hangs (batch_timeout_ms) is replaced and its
    batches made again. Per-sample randomness: before each sample the
    worker seeds random, numpy.random and torch (if imported) from (seed,
    epoch, index), so augmentations differ per sample and not with the worker
    count (seed_globals=False skips it); sluice.rng() is the sample's own
    NumPy Generator.
    """

    def __init__(self, path=None, record=None, *, dataset=None, sequence=None, fill=None, size=None,
                 fields=None, worker_init=None, seed_globals=True, format="dlpack", ragged=None, **overrides):
        if path is not None and not isinstance(path, (str, bytes, os.PathLike)):
            if dataset is not None:
                raise OptionsError("sluice.Loader got a dataset twice: first positional and dataset=")
            path, dataset = None, path  # Loader(ds, batch_size=32), as DataLoader(ds, batch_size=32)
        # DataLoader's prefetch_factor is per worker: with no worker count given, it assumes the default one.
        factor_assumes = ("prefetch_factor" in overrides and "workers" not in overrides
                          and "num_workers" not in overrides)
        overrides, worker_init, pin_memory, init_fn, persistent = _compat.translate(overrides, worker_init)
        self._pinning = _pinning.Pinning() if pin_memory else None
        if self._pinning is not None:
            weakref.finalize(self, self._pinning.unpin)  # a Loader collected without close()
        workers = overrides.get("workers")
        if isinstance(workers, int) and not isinstance(workers, bool) and workers < 0:
            raise OptionsError("workers= (num_workers=) is 0 (every sample made in this process: Python datasets), "
                        "1 to 256, or 'auto'; got %d" % workers)
        inline = str(overrides.get("workers", "")) == "0"
        if inline and init_fn:
            worker_init = None  # DataLoader's worker_init_fn runs in workers only: num_workers=0 has none
        if inline:
            if path is not None:
                raise OptionsError("workers=0 is for Python datasets; a pipeline.lua runs in 1 or more workers")
            del overrides["workers"]
        settings = [(name, _setting_text(value)) for name, value in overrides.items()]
        if not any(name.replace("-", "_") == "held_timeout_ms" for name in overrides):
            settings.append(("held_timeout_ms", str(DEFAULT_HELD_TIMEOUT_MS)))
        record = os.fspath(record) if record is not None else ""
        given = [name for name, value in (("path", path), ("dataset", dataset), ("sequence", sequence),
                                          ("fill", fill)) if value is not None]
        if len(given) != 1:
            raise OptionsError("sluice.Loader takes one of a pipeline path, dataset=, sequence= or fill= (got %s)"
                        % (", ".join(given) or "none"))
        if path is None and not any(name.replace("-", "_") == "epochs" for name in overrides):
            settings.append(("epochs", "0"))  # a loop per epoch, for as many loops as the program makes
        if format not in _structure.FORMATS:
            raise OptionsError("format= is one of %s, not %r" % (", ".join(map(repr, _structure.FORMATS)), format))
        self._format = format
        if path is not None:
            if worker_init is not None:
                raise OptionsError("%s= is for Python datasets: a pipeline.lua's workers run Lua, not this process's "
                            "Python (set up there, at the script's top level, or give dataset=)"
                            % ("worker_init_fn" if init_fn else "worker_init"))
            if ragged is not None or fields is not None:
                raise OptionsError("%s= is for Python datasets: a pipeline.lua declares its fields itself"
                            % ("ragged" if ragged is not None else "fields"))
            self._core = _Loader(os.fspath(path), settings, record)
            shape = None
        else:
            self._core, shape = self._dataset_core(dataset, sequence, fill, size, fields, worker_init, overrides,
                                                   settings, record, bool(seed_globals), format, inline, ragged)
        self._python_workers = path is None and not inline
        # persistent_workers=False: each epoch's loop forks the workers afresh (_to_next_epoch).
        self._fresh_each_epoch = self._python_workers and not persistent
        self._info = self._core.info()
        for note in self._info.get("left_out", ()):
            # Data the load left out under on_error="skip": the CLI prints it; here
            # it would sit unseen in info["notes"].
            warnings.warn("sluice: " + note, RuntimeWarning, stacklevel=2)
        if factor_assumes and path is not None and str(self._info["workers"]) != _default("workers"):
            self._core.close()
            raise OptionsError("prefetch_factor= is per worker, and %s sets workers = %s: give num_workers= with it "
                        "(or prefetch=, the batch slots in all)" % (os.fspath(path), self._info["workers"]))
        self._shape = self._shaper(path is not None, shape)
        self._dataset = dataset if dataset is not None else sequence
        self._closed = False
        self._go_on = True  # the next loop goes on from where the run stands (set by a start or a resume)
        self._loop = None  # a weak reference to the last loop's iterator, to tell a second loop begun meanwhile
        self._start_from = (None, False)  # where _started() starts the workers: (resume_json, same_run)
        self.resume_note = None  # set by load_state_dict() from several ranks' states
        _open_loaders.add(self)

    @staticmethod
    def _dataset_core(dataset, sequence, fill, size, fields, worker_init, overrides, settings, record,
                      seed_globals, fmt, inline, ragged):
        """(the _Loader, its sample tree or None) for dataset=, sequence= or fill=;
        inline (workers=0): an _inline.InlineCore, its batches always shaped here."""
        if inline and record:
            raise OptionsError("workers=0 writes no run record (record=): it is for debugging a dataset")
        normal = {name.replace("-", "_"): value for name, value in overrides.items()}
        try:
            seed = int(normal.get("seed", 0))
        except (TypeError, ValueError):
            raise OptionsError("seed expects an integer, got %r" % (normal.get("seed"),)) from None
        on_error = normal.get("on_error", "fail")
        if worker_init is not None and not callable(worker_init):
            raise OptionsError("worker_init must be callable as worker_init(worker_id)")
        if not inline:
            worker_init = _compat.worker_started(worker_init, dataset if dataset is not None else
                                                 sequence if sequence is not None else fill, seed,
                                                 normal.get("workers", _default("workers")))
        if fill is not None:
            if not callable(fill):
                raise OptionsError("fill= must be callable as fill(index, out)")
            if size is None or fields is None:
                raise OptionsError("fill= needs size= (the number of samples) and fields= ({name: (dtype, shape)})")
            tree, described = _structure.declared(fields, "fields", ragged)
            if not isinstance(tree, dict):
                raise OptionsError("fill= takes fields={name: (dtype, shape)}: out is a dict of NumPy views")
            if _structure.has_ragged(tree):
                raise OptionsError("fill= writes into fixed-size views: a str, bytes or variable-length field needs "
                            "dataset= (its __getitem__ returns the value)")
            if inline:
                return _inline.InlineCore("fill", fill, tree, described, int(size), settings, seed_globals,
                                          worker_init, getattr(fill, "__qualname__", type(fill).__name__)), tree
            delivery = "batch" if fmt == "dlpack" else "tuple"
            core = _dataset_loader("fill", fill, None, described, int(size), settings, record, worker_init,
                                   getattr(fill, "__qualname__", type(fill).__name__), True, seed_globals, delivery)
            return core, (tree if fmt != "dlpack" else None)
        kind = "dataset" if dataset is not None else "sequence"
        source = dataset if dataset is not None else sequence
        hook = getattr(type(source), "on_epoch_end", None)
        if kind == "sequence" and hook is not None and hook.__qualname__.split(".")[0] not in ("Sequence", "PyDataset"):
            warnings.warn("%s.on_epoch_end is never called: the workers hold copies of the sequence, and each "
                          "epoch's order comes from shuffle= and seed= (give shuffle=True instead of shuffling "
                          "indices there)" % type(source).__qualname__, RuntimeWarning, stacklevel=3)
        if size is not None:
            raise OptionsError("size= is for fill=; a %s has len()" % kind)
        try:
            count = len(source)
        except TypeError:
            raise OptionsError("%s= needs len() and [index] (a map-style dataset), got %s" % (kind, type(source).__name__)) from None
        if count == 0:
            raise OptionsError("the %s is empty (len() == 0)" % kind)
        if fields is not None:
            tree, described = _structure.declared(fields, "fields", ragged)
            if kind == "sequence" and _structure.has_ragged(tree):
                raise OptionsError("a sequence's batch holds arrays only: a str, bytes or variable-length field needs dataset=")
        else:
            # Made in a child first, unless workers=0 makes every sample here anyway.
            try:
                timeout_ms = int(normal.get("batch_timeout_ms", 0))
            except (TypeError, ValueError):
                timeout_ms = 0  # the settings say what is wrong with it
            timeout_s = _trial_child.START_ALLOWANCE_S + timeout_ms / 1000 if timeout_ms > 0 else None
            index, first = _first(source, kind, on_error, seed, seed_globals, not inline, timeout_s)
            tree, described = _structure.describe(first, "%s[%d]" % (kind, index), kind == "sequence", ragged)
        if not described:  # as the workers' loader refuses it (dataset_loader.cpp)
            raise OptionsError("a dataset's samples need at least one field")
        if inline:
            return _inline.InlineCore(kind, source, tree, described, count, settings, seed_globals, worker_init,
                                      type(source).__qualname__), tree
        # Today's deliveries where they keep the sample's shape: a flat dict as a Batch (a dict for a
        # sequence), a flat tuple as a tuple of Arrays, an array as an Array; else built here.
        if fmt != "dlpack" or not _structure.flat(tree) or _structure.own_containers(tree):
            delivery, shape = "tuple", tree
        elif isinstance(tree, dict):
            delivery, shape = ("batch" if kind == "dataset" else "dict"), None
        else:
            delivery, shape = ("tuple" if isinstance(tree, list) else "single"), None
        core = _dataset_loader(kind, source, tree, described, count, settings, record, worker_init,
                               type(source).__qualname__, fields is not None, seed_globals, delivery)
        return core, shape

    # --- Iteration ----------------------------------------------------------
    def __len__(self):
        return self._core.batches_per_epoch()

    def __iter__(self):
        """The batches of the current epoch (an iterator that survives
        KeyboardInterrupt and sluice.Error: iterate it again to go on); the
        next epoch's when the last loop was left mid-epoch by its consumer."""
        core = self._started()
        live = self._loop() if self._loop is not None else None
        if live is not None and not getattr(live, "done", True):
            # zip(loader, loader), or next(iter(loader)) inside a loop over it: DataLoader would give each
            # its own stream; a Loader is one stream of batches, which the new loop takes over.
            warnings.warn("a new loop over this loader began while another was going on: the loader is one stream "
                          "of batches, so the earlier loop's epoch ends here (make a second sluice.Loader for a "
                          "second stream)", RuntimeWarning, stacklevel=2)
        left_by_loader = core.left_by_exception()
        if not self._go_on and not core.finished() and not left_by_loader:
            self._to_next_epoch(core)
        self._go_on = False
        epochs = self._info["epochs"]
        if core.finished() and 0 < epochs <= core.current_epoch():  # over, not failed: the loop yields nothing
            warnings.warn("this loop over the loader yields nothing: the run's epochs=%d are over "
                          "(epochs=0 loops for as long as the program does)" % self._info["epochs"],
                          RuntimeWarning, stacklevel=2)
        # Shaped in C++: Ctrl-C while it shapes gives the batch back, and the next loop goes on with it.
        loop = core.epoch_iter() if self._shape is None else core.shaped_iter(self._shape)
        try:
            self._loop = weakref.ref(loop)
        except TypeError:  # workers=0: a generator, which takes weak references too; anything else is not watched
            self._loop = None
        return loop

    def _to_next_epoch(self, core):
        """A loop left mid-epoch ended that epoch: the workers restart at the
        next one's first batch (what is prefetched of this one is dropped).
        With persistent_workers=False they restart there after a whole epoch
        too, forked from this process as it is now."""
        state = json.loads(core.state_json())
        if state["batch"] == 0 and not state["delivered_ahead"]:
            if self._fresh_each_epoch:
                self._start(json.dumps(state), same_run=True)
            return  # the last loop ran to its epoch's end
        state.update(epoch=state["epoch"] + 1, batch=0, delivered_ahead=[])
        self._start(json.dumps(state), same_run=True)

    def _shaper(self, pipeline, tree):
        """What turns a delivered batch into what the loop yields, or None where it is that already."""
        if pipeline:
            if self._format == "dlpack":
                return None
            tree = {name: i for i, (name, _, _) in enumerate(self._info["fields"])}
            build = _structure.builder(tree, self._info["fields"], self._format)
            return lambda batch: build(tuple(batch.values()))
        if tree is None:
            return None
        return _structure.builder(tree, self._info["fields"], self._format)

    def _started(self):
        if self._closed:
            raise Error("the loader has been closed")
        if not self._core.started():
            self._start(*self._start_from)
        return self._core

    def _start(self, resume_json, same_run=False):
        """(Re)starts the workers at resume_json's position (None: the run's
        start). Where that fails (Ctrl-C meanwhile), the next use starts
        them there (_start_from), not at the run's start."""
        if self._python_workers:
            # The workers are copies of this process: what is buffered now would be printed by each.
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except Exception:
                    pass
        if self._pinning is not None:
            self._pinning.unpin()  # before the old arena may be unmapped
        self._start_from = (resume_json, same_run)
        self._core.start(resume_json, same_run)
        self._start_from = (None, False)
        if self._pinning is not None:
            if isinstance(self._core, _inline.InlineCore):
                self._pinning.pin(None, "workers=0 makes fresh NumPy batches, which")
            else:
                self._pinning.pin(self._core.memory(), "the loader's arena")

    # --- Checkpoints (torchdata StatefulDataLoader style) -------------------
    def state_dict(self):
        """Where the run stands, as a dict of plain values (torch.save-able).

        A Loader of the same pipeline given it by load_state_dict() delivers
        exactly the batches this one's iterator would deliver next, whatever
        its worker count, prefetch or ordering: taken at a break, the rest of
        that epoch (where a new loop over this loader starts the next one).
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
                raise OptionsError("load_state_dict: an empty list of states")
            text, self.resume_note = _merge_states([_state_text(s) for s in state_dict])
        else:
            text = _state_text(state_dict)
            _check_state(text)
            self.resume_note = None
        self._start(text)
        self._go_on = True

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

    # DataLoader's attributes, where evaluation code reads them (len(loader.dataset)).
    @property
    def dataset(self):
        """The dataset= (or sequence=) given; None for a pipeline.lua or fill=."""
        return self._dataset

    @property
    def num_workers(self):
        return self._info["workers"]

    @property
    def drop_last(self):
        return self._info["drop_last"]

    # --- Lifetime -----------------------------------------------------------
    def close(self):
        """Stops the workers and completes the run record. Batches and tensors
        still alive stay valid; the loader can no longer be used."""
        self._closed = True
        if self._pinning is not None:
            self._pinning.unpin()
        self._core.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return "<sluice.Loader %s: %d batches of %d per epoch>" % (
            self._info["path"], len(self), self._info["batch_size"])


_SIZE_UNITS = {"": 1, "B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30}


def _shard_bytes(size):
    """shard_size= as bytes: an int, or a str such as "256MB" or "1GiB"."""
    if isinstance(size, int) and not isinstance(size, bool):
        n = size
    elif isinstance(size, str):
        digits = len(size) - len(size.lstrip("0123456789"))
        unit = size[digits:]
        if digits == 0 or unit not in _SIZE_UNITS:
            raise OptionsError("shard_size expects bytes (an int) or a size such as '256MB' or '1GiB', got %r" % size)
        n = int(size[:digits]) * _SIZE_UNITS[unit]
    else:
        raise OptionsError("shard_size expects bytes (an int) or a size such as '256MB', got %r" % (size,))
    if n < 1024:
        raise OptionsError("shard_size %r is less than 1 KiB" % (size,))
    return n


def write(source, to, *, format="tar", shard_size=None, shard_samples=None, staging=None, **settings):
    """Writes every sample of a pipeline or a Python dataset as shards in the folder `to`.

    write("pipeline.lua", "out", format="tar", shard_samples=1000, workers=8)
    write(my_dataset, "out", format="tfrecord", shard_size="256MB", workers=4)
    write(sluice.Loader(dataset=ds, workers=4), "out")   # a Loader that has not started

    One epoch, in plan order, made in the loader's workers (settings= as for
    sluice.Loader; epochs is 1): the same shards as `sluice write`
    (docs/command-line.md): WebDataset tars (format="tar": one member per
    field, KEY.EXT; bytes and str values as they are, an integer scalar as
    NAME.cls text, other arrays as NAME.npy) or TFRecords of tf.train.Example
    (format="tfrecord"), each shard with its index beside it, cut every
    shard_samples samples or before shard_size bytes (default "256MB"), and
    `to`/manifest.json listing every shard with its sample count, bytes and
    xxh3 checksum. The shards do not depend on the worker count. Called again
    after a crash or kill, it keeps the complete shards and writes the rest;
    the manifest records the plan (dataset size, batch size, shuffle, seed,
    rank, world size, a pipeline.lua's hash; not the workers), and a call
    whose plan differs raises sluice.Error naming what differs.

    to="s3://bucket/prefix/" (or "https://host/path/" on a server that takes
    PUT, one PUT per object) stages each shard in a local folder (staging=,
    default under the cache folder), uploads it (multipart when large),
    deletes the local copy and then uploads the manifest listing it; the
    manifest in the store is what a resumed write keeps shards by.

    A dataset's bytes and str values travel in the slot padded to a room:
    give ragged={"jpg": most bytes} (sluice.Loader) when the first sample's
    is not representative. A pipeline declares { "jpg", "bytes", MAX }.

    Returns the manifest as a dict, with "skipped": the samples that
    on_error = "skip" left out of the shards, as {"sample": id, "reason": ...}
    (also told by a UserWarning; the manifest file does not list them).
    Raises sluice.Error.
    """
    to = os.fspath(to)
    remote = to.startswith(("s3://", "http://", "https://"))
    if "://" in to and not remote:
        raise OptionsError("sluice.write: %s: only local folders and s3://, http:// and https:// URLs can be written" % to)
    if staging is not None and not remote:
        raise OptionsError("sluice.write: staging= is for to=\"s3://...\" or \"https://...\"")
    if format not in ("tar", "tfrecord"):
        raise OptionsError("sluice.write: format is 'tar' or 'tfrecord', not %r" % (format,))
    if shard_size is not None and shard_samples is not None:
        raise OptionsError("sluice.write: give shard_size or shard_samples, not both")
    if shard_samples is not None and (not isinstance(shard_samples, int) or shard_samples < 1):
        raise OptionsError("sluice.write: shard_samples is an int >= 1, not %r" % (shard_samples,))
    shard_bytes = 0 if shard_samples is not None else _shard_bytes(shard_size if shard_size is not None else "256MB")
    if isinstance(source, Loader):
        if settings:
            raise OptionsError("sluice.write: settings (%s) go to the Loader, which is given already" % ", ".join(settings))
        loader, owned = source, False
    elif isinstance(source, (str, bytes, os.PathLike)):
        loader, owned = Loader(os.fspath(source), **settings), True
    else:
        loader, owned = Loader(dataset=source, **settings), True
    try:
        if not isinstance(loader._core, _Loader):
            raise OptionsError("sluice.write runs in worker processes: workers=0 is for debugging a dataset")
        manifest, skipped = loader._core.write(to, format, shard_samples or 0, shard_bytes,
                                               os.fspath(staging) if staging is not None else "")
        out = json.loads(manifest)
        out["skipped"] = [{"sample": sample, "reason": reason} for sample, reason in skipped]
        if skipped:
            sample, reason = skipped[0]
            warnings.warn("sluice.write: %d sample%s skipped (on_error = \"skip\"), not in the shards; the first: "
                          "sample %d: %s" % (len(skipped), "" if len(skipped) == 1 else "s", sample,
                                             reason.split("\n")[0]), UserWarning, stacklevel=2)
        return out
    finally:
        if owned:
            loader.close()


def _state_text(state_dict):
    """The loader state's JSON inside one state_dict(), checked for shape."""
    if not isinstance(state_dict, dict) or _STATE_KEY not in state_dict:
        raise OptionsError("load_state_dict expects a dict from sluice.Loader.state_dict() (with the key '"
                    + _STATE_KEY + "'), or a list of them")
    if state_dict.get("format") != _STATE_FORMAT:
        raise OptionsError("load_state_dict: state format %r, this sluice reads %d"
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
