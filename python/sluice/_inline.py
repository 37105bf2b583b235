"""workers=0 (num_workers=0): every sample made in this process, on the
loop's thread, so that pdb, breakpoints and prints work as in any code.

The batches are those of any worker count: the same plan (_InlinePlan, the
runtime's EpochPlan), each sample's generators seeded alike and sluice.rng()
keyed alike. Each batch is fresh NumPy memory (a bool field as uint8, as in a
slot), delivered in the sample's shape by Loader. state_dict() and
load_state_dict() are the workers' format. Not here: on_error="skip", records,
stats(), memory() and worker_pids() (there are no workers).
"""
import math
import warnings

import numpy as np

from ._sluice import Error, _InlinePlan, _trial
from . import _generators
from ._structure import Ragged, check_list


def _walk(value, tree, what, label, out, labels=None):
    """out[f] = field f of value, checked against the tree of the first sample
    (a variable-length leaf's value at its values field); labels[f] = where
    it lies in the sample ("['meta']['label']"), for errors named as the
    workers name them."""
    if isinstance(tree, (Ragged, int)):
        f = tree.values if isinstance(tree, Ragged) else tree
        out[f] = value
        if labels is not None:
            labels[f] = label
    elif isinstance(tree, dict):
        if not isinstance(value, dict):
            raise Error("%s%s is %s, not a dict as the first was" % (what, label, type(value).__name__))
        if len(value) != len(tree):
            raise Error("%s%s has %d keys, the first had %d (%s)" % (what, label, len(value), len(tree), ", ".join(tree)))
        for key, child in tree.items():
            if key not in value:
                raise Error("%s%s has no '%s', which the first had" % (what, label, key))
            _walk(value[key], child, what, "%s[%r]" % (label, key), out, labels)
    else:
        if not isinstance(value, (tuple, list)):
            raise Error("%s%s is %s, not a tuple as the first was" % (what, label, type(value).__name__))
        if len(value) != len(tree):
            raise Error("%s%s has %d items, the first had %d" % (what, label, len(value), len(tree)))
        for i, child in enumerate(tree):
            _walk(value[i], child, what, "%s[%d]" % (label, i), out, labels)


def _carried(dtype):
    return np.dtype("uint8") if dtype == "bool" else np.dtype(dtype)


def _ragged_leaves(tree, out):
    """out[values field] = its Ragged leaf, for every variable-length leaf of the tree."""
    if isinstance(tree, Ragged):
        out[tree.values] = tree
    elif isinstance(tree, dict):
        for child in tree.values():
            _ragged_leaves(child, out)
    elif isinstance(tree, list):
        for child in tree:
            _ragged_leaves(child, out)
    return out


def _ragged_row(value, leaf, dtype, shape, where, name):
    """(entries, count) of a variable-length value, checked as a worker checks it."""
    if leaf.kind == "str":
        if not isinstance(value, str):
            raise Error("%s is %s, not str as the first was" % (where, type(value).__name__))
        a = np.frombuffer(value.encode("utf-8", "surrogatepass"), np.uint8)
        unit = "bytes"
    elif leaf.kind == "bytes":
        if not isinstance(value, (bytes, bytearray, memoryview)):
            raise Error("%s is %s, not bytes as the first was" % (where, type(value).__name__))
        a = np.frombuffer(memoryview(value).tobytes(), np.uint8)  # a strided memoryview too
        unit = "bytes"
    elif np.asarray(value).size == 0:  # [] is float64 to NumPy: an empty value of any dtype is 0 entries
        return np.zeros((0,) + tuple(shape[1:]), _carried(dtype)), 0
    else:
        a = InlineCore._checked(value, dtype, None, where)
        if a.ndim != len(shape) or a.shape[1:] != tuple(shape[1:]):
            raise Error("%s has shape %s, the first had %s (-1: any length up to its room)"
                        % (where, a.shape, (-1,) + tuple(shape[1:])))
        unit = "entries"
    if a.shape[0] > shape[0]:
        raise Error("%s holds %d %s, more than the %d a sample of '%s' has room for: give the Loader "
                    "ragged={'%s': %d} or more" % (where, a.shape[0], unit, shape[0], name, name, a.shape[0]))
    return a, a.shape[0]

class InlineCore:
    """What Loader asks of a _Loader, for workers=0. Batches are tuples of
    fields in field order (a sequence's cut to its rows)."""

    def __init__(self, kind, source, tree, fields, size, settings, seed_globals, worker_init, description):
        self._kind, self._source, self._tree, self._fields = kind, source, tree, fields
        self._seed_globals = seed_globals
        self._ragged = _ragged_leaves(tree, {}) if kind != "fill" else {}
        self._lengths = {leaf.lengths for leaf in self._ragged.values()}
        names = {name.replace("-", "_"): value for name, value in settings}
        if names.get("on_error", "fail") != "fail":
            raise Error("workers=0 makes samples with on_error='fail' only (skip needs the workers' runtime)")
        self._plan = _InlinePlan(settings, size)
        self._seed = self._plan.seed()
        self._epoch, self._batch = 0, 0
        self._started = False
        self._left_by_exception = False
        self._closed = False
        self._worker_init = worker_init
        self._info = self._plan.info()  # every setting's value, as a loader with workers has it
        self._info.update({"path": description, "kind": kind, "device": "cpu", "workers": 0,
                           "fields": [(name, dtype, tuple(shape)) for name, dtype, shape in fields], "notes": []})
        if kind == "sequence":
            self._info["batch_size"] = fields[0][2][0]

    # --- The _Loader interface ----------------------------------------------
    def info(self):
        return dict(self._info)

    def started(self):
        return self._started

    def start(self, resume_json, same_run=False):
        if self._closed:
            raise Error("the loader has been closed")
        if not self._started and self._worker_init is not None:
            self._worker_init(0)
        self._started = True
        if resume_json is not None:
            self._epoch, self._batch = self._plan.position(resume_json)

    def epoch_iter(self):
        epoch = self._epoch
        while not self.finished() and self._epoch == epoch:
            self._left_by_exception = True  # until the batch is made
            batch = self._make(self._epoch, self._batch)
            self._left_by_exception = False
            self._batch += 1
            if self._batch == self._plan.batches_per_epoch():
                self._epoch, self._batch = self._epoch + 1, 0
            yield batch

    def shaped_iter(self, shape):
        """epoch_iter's batches through shape (workers=0 makes every batch in
        the loop, where a Ctrl-C may land anywhere: nothing is given back)."""
        for batch in self.epoch_iter():
            self._left_by_exception = True  # until it is shaped
            shaped = shape(batch)
            self._left_by_exception = False
            yield shaped

    def left_by_exception(self):
        """Whether the last batch asked for raised (as PyLoader's)."""
        return self._left_by_exception

    def batches_per_epoch(self):
        return self._plan.batches_per_epoch()

    def state_json(self):
        return self._plan.state_json(self._epoch, self._batch)

    def current_epoch(self):
        return self._epoch

    def finished(self):
        epochs = self._plan.epochs()
        return epochs != 0 and self._epoch >= epochs

    def close(self):
        self._closed = True

    def stats(self):
        raise Error("workers=0 keeps no stats: there are no workers")

    def memory(self):
        raise Error("workers=0 has no shared arena: each batch is fresh NumPy memory")

    def worker_pids(self):
        return []

    def slots(self):
        return 0

    # --- Making a batch ---------------------------------------------------------
    def _begin(self, epoch, index):
        _trial(True, self._seed, index, epoch)
        if self._seed_globals:
            _generators.seed_sample(self._seed, epoch, index)

    def _make(self, epoch, b):
        ids = self._plan.batch(epoch, b)
        # The host's generators are its own again after the batch, as with workers.
        with _generators.kept():
            try:
                if self._kind == "sequence":
                    return self._sequence(epoch, ids[0])
                out = [np.empty((len(ids),) + tuple(shape), _carried(dtype)) for _, dtype, shape in self._fields]
                for j, index in enumerate(ids):
                    self._begin(epoch, index)
                    if self._kind == "fill":
                        views = {name: out[f][j].view(np.bool_) if dtype == "bool" else out[f][j]
                                 for f, (name, dtype, _) in enumerate(self._fields)}
                        self._source(index, views)
                    else:
                        self._sample(index, out, j)
                return tuple(out)
            finally:
                _trial(False, 0, 0)

    def _sample(self, index, out, j):
        what = "dataset[%d]" % index
        leaves, labels = [None] * len(self._fields), [""] * len(self._fields)
        _walk(self._source[index], self._tree, what, "", leaves, labels)
        for f, (name, dtype, shape) in enumerate(self._fields):
            if f in self._lengths:
                continue
            leaf = self._ragged.get(f)
            if leaf is None:
                out[f][j] = self._checked(leaves[f], dtype, shape, what + labels[f])
                continue
            a, count = _ragged_row(leaves[f], leaf, dtype, shape, what + labels[f], name)
            row = out[f][j]
            row[:count] = a.view(np.uint8) if dtype == "bool" else a
            row[count:] = 0
            out[leaf.lengths][j] = count

    def _sequence(self, epoch, index):
        self._begin(epoch, index)
        what = "sequence[%d]" % index
        leaves, labels = [None] * len(self._fields), [""] * len(self._fields)
        _walk(self._source[index], self._tree, what, "", leaves, labels)
        return tuple(self._checked(leaf, dtype, None, what + label)
                     for leaf, label, (_, dtype, _) in zip(leaves, labels, self._fields))

    @staticmethod
    def _checked(value, dtype, shape, where):
        # As the workers check (dataset_producer.cpp, ValueWriter): an array
        # must have the field's dtype; only a Python number (exactly bool,
        # int or float: not NumPy's float64, a float's subclass) is converted,
        # and an integer field takes only what it holds exactly.
        if value is None:
            raise Error("%s is None, the first was %s" % (where, dtype))
        a = np.asarray(value)
        check_list(value, a, where)
        if a.dtype.name != dtype:
            if type(value) not in (bool, int, float):
                raise Error("%s is %s, the first was %s" % (where, a.dtype, dtype))
            try:
                with warnings.catch_warnings():  # NumPy 1.24 warns and wraps 300 into uint8: checked here
                    warnings.simplefilter("ignore", DeprecationWarning)
                    warnings.simplefilter("ignore", RuntimeWarning)  # 1e40 into float32: inf, checked here
                    a = np.asarray(value, dtype)
                if dtype in ("float16", "float32", "float64"):  # rounds, but not past its range into inf
                    held = not math.isinf(a.item()) or math.isinf(value) or math.isnan(value)
                else:
                    held = a.item() == value
            except (ValueError, OverflowError):  # NaN or inf into an integer; NumPy 2's out of range
                held = False
            if not held:
                raise Error("%s is %r, which %s cannot hold" % (where, value, dtype))
        if shape is not None and a.shape != tuple(shape):
            raise Error("%s has shape %s, the first had %s" % (where, a.shape, tuple(shape)))
        return a.view(np.uint8) if dtype == "bool" else a
