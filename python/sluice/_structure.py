"""A sample's structure: its fields, where each lies, and batches built back in
that shape (as sluice.Array, torch tensors or NumPy arrays).

Dicts and tuples nest; a list counts as a tuple at the top of a sample (as a
sequence's (x, y)) and is one array below it (np.asarray of it; refused where
that would round an integer item, list_problem); a batch is built back in the
sample's own containers (a namedtuple as its type, a top-level list as a list); anything else is one field,
whatever NumPy makes of it (an int label is an int64 field). A field's name is
its path: "image" for a dict's key, "0" for a tuple's first item, "meta.label"
or "1.0" below. The description given to the extension is the tree of field
indices: an int, a dict {key: tree}, a list [tree] or a Ragged leaf.

Variable-length leaves (a str, bytes, or an array named in ragged= whose first
dimension varies) travel in the slot as two fields (the layout C++ and the
run record see):
    NAME          the values, one row per sample padded with zeros to the
                  field's room: shape (batch, room, *rest), uint8 for str
                  (UTF-8) and bytes
    NAME.lengths  int64 (batch,): how many of its row's first-dimension
                  entries (bytes for str and bytes) each sample holds
and are delivered as a list of str, a list of bytes, or for arrays a list of
zero-copy views (format torch or numpy) or the (values, lengths) pair as
sluice.Arrays (format dlpack). A sample longer than its room fails naming it
and ragged=.
"""
from collections import namedtuple

from ._sluice import Error

# NumPy dtype names sluice carries (sluice/dtype.h, less bfloat16).
DTYPES = ("bool", "uint8", "int8", "uint16", "int16", "uint32", "int32", "uint64", "int64",
          "float16", "float32", "float64")
FORMATS = ("dlpack", "torch", "numpy")

# A variable-length leaf: kind "str", "bytes" or "array"; values and lengths
# are the indices of its two fields. The extension reads it as a 4-tuple.
Ragged = namedtuple("Ragged", "tag kind values lengths")


class Items(list):
    """A tuple's (or a top-level list's) node of the tree: its children, and
    `make`, what builds the batch's container from them (tuple, list, or a
    namedtuple's _make)."""
    make = tuple


def _items(children, sample):
    node = Items(children)
    if isinstance(sample, tuple) and hasattr(type(sample), "_fields"):
        node.make = type(sample)._make
    elif isinstance(sample, list):
        node.make = list
    return node
RAGGED_TAG = "ragged"
LENGTHS = ".lengths"
# Room per sample when ragged= does not give one: four times the first
# sample's, at least 1 KiB of values.
_MIN_ROOM_BYTES = 1024


def _room(first_rows, row_bytes):
    return max(4 * first_rows, -(-_MIN_ROOM_BYTES // max(row_bytes, 1)))


def _rooms(ragged):
    """ragged= as {name: room or None}: a dict of rooms, or names (a str, list or set)."""
    if ragged is None:
        return {}
    if isinstance(ragged, str):
        return {ragged: None}
    if isinstance(ragged, dict):
        out = {}
        for name, room in ragged.items():
            if room is not None and (not isinstance(room, int) or isinstance(room, bool) or room < 1):
                raise Error("ragged={%r: %r}: a room is an int >= 1 (entries of the first dimension per sample; "
                            "bytes for str and bytes)" % (name, room))
            out[str(name)] = room
        return out
    try:
        return {str(name): None for name in ragged}
    except TypeError:
        raise Error("ragged= takes field names, or {name: room}, not %r" % (ragged,)) from None


def list_problem(value, a, where):
    """Why the array `a` NumPy made of a list below the top of a sample (one
    leaf: np.asarray of it) does not stand for the list, or None. NumPy's
    promotion keeps every value except an integer among floats that the
    floating dtype cannot hold (an int64 beyond 2**53 in float64): such a
    list is refused, not rounded. Every sample's such lists are checked (the
    workers call this too, dataset_producer.cpp)."""
    import numpy as np
    if a.dtype.kind != "f":
        return None
    items = [value]
    while items:
        item = items.pop()
        if isinstance(item, (list, tuple)):
            items.extend(item)
            continue
        if isinstance(item, (float, np.floating)):  # the usual items, held as they are
            continue
        i = np.asarray(item)
        if i.dtype.kind not in "iu":
            continue
        held = i.astype(a.dtype).astype(object)
        exact = i.astype(object)
        if not np.array_equal(held, exact):
            k = np.flatnonzero(held.ravel() != exact.ravel())[0]
            return ("%s is a list, which below the top of a sample is one array, and NumPy makes it %s, which "
                    "changes its item %r into %r: give its items one dtype (np.asarray(..., dtype=...)), or make it "
                    "a tuple to carry each item as a leaf of its own" % (where, a.dtype, exact.ravel()[k],
                                                                         held.ravel()[k]))
    return None


def check_list(value, a, where):
    """Raises Error when `value` is a list that `a`, the array NumPy made of
    it, does not stand for (list_problem); anything else passes."""
    problem = list_problem(value, a, where) if isinstance(value, list) else None
    if problem:
        raise Error(problem)


def describe(value, what, sequence, ragged=None):
    """(tree, fields) of a sample or a sequence's batch; fields: [(name, dtype, shape)],
    a variable-length leaf laid out as two (see above)."""
    import numpy as np
    fields = []
    rooms = _rooms(ragged)
    used = set()

    def ragged_leaf(kind, name, label, dtype, first_rows, rest):
        if sequence:
            raise Error("%s%s is %s: a sequence's batch holds arrays only (give a dataset= to carry %s per sample)"
                        % (what, label, "an array of varying length" if kind == "array" else kind, kind))
        row_bytes = np.dtype(dtype).itemsize * int(np.prod(rest, dtype=np.int64))
        room = rooms.get(name) or _room(first_rows, row_bytes)
        if first_rows > room:
            raise Error("%s%s holds %d, more than ragged={%r: %d}" % (what, label, first_rows, name, room))
        used.add(name)
        fields.append((name, dtype, (room,) + rest))
        fields.append((name + LENGTHS, "int64", ()))
        return Ragged(RAGGED_TAG, kind, len(fields) - 2, len(fields) - 1)

    def walk(v, path, label, top):
        if isinstance(v, dict):
            tree = {}
            for key in v:
                if not isinstance(key, str):
                    raise Error("%s%s has the key %r: a sample's keys must be str" % (what, label, key))
                tree[key] = walk(v[key], path + [key], "%s[%r]" % (label, key), False)
            return tree
        if isinstance(v, tuple) or (top and isinstance(v, list)):
            return _items([walk(item, path + [str(i)], "%s[%d]" % (label, i), False) for i, item in enumerate(v)], v)
        name = ".".join(path) if path else "0"
        if isinstance(v, str):
            return ragged_leaf("str", name, label, "uint8", len(v.encode("utf-8", "surrogatepass")), ())
        if isinstance(v, (bytes, bytearray, memoryview)):
            return ragged_leaf("bytes", name, label, "uint8", memoryview(v).nbytes, ())
        if v is None:
            raise Error("%s%s is None: each leaf of a sample is a number, an array, a str or bytes (give a missing "
                        "value one, e.g. -1 or NaN, or an empty array with a ragged field)" % (what, label))
        try:
            a = np.asarray(v)
        except Exception as error:
            raise Error("%s%s is %s, which is not an array: %s" % (what, label, type(v).__name__, error)) from None
        if a.dtype.name not in DTYPES:
            if isinstance(v, list):
                raise Error("%s%s is a list, which below the top of a sample is one array, and NumPy makes it %s, "
                            "which sluice does not carry (%s): make it a tuple to carry each item as a leaf of its "
                            "own (a str or bytes one is a variable-length leaf)"
                            % (what, label, a.dtype, ", ".join(DTYPES)))
            raise Error("%s%s is %s, which sluice does not carry (%s)" % (what, label, a.dtype, ", ".join(DTYPES)))
        check_list(v, a, what + label)
        if sequence and a.ndim == 0:
            raise Error("%s%s is a scalar: a sequence's batch has rows" % (what, label))
        shape = tuple(int(d) for d in a.shape)
        if name in rooms:
            if a.ndim == 0:
                raise Error("%s%s is a scalar: ragged= names arrays whose first dimension varies" % (what, label))
            if a.size == 0 and not isinstance(v, np.ndarray):
                raise Error("%s%s is empty, which tells no dtype: give fields= with (dtype, (None, ...)) for it, "
                            "or return an empty NumPy array of the dtype" % (what, label))
            return ragged_leaf("array", name, label, a.dtype.name, shape[0], shape[1:])
        fields.append((name, a.dtype.name, shape))
        return len(fields) - 1

    tree = walk(value, [], "", True)
    _check_names(fields, rooms, used, what)
    return tree, fields


def declared(fields, what, ragged=None):
    """fields={"name": (dtype, shape)} or [(name, dtype, shape)] -> (tree, fields).

    dtype "str" or "bytes" declares a variable-length leaf, shape (room,) its
    bytes per sample; a shape starting with None an array whose first
    dimension varies (its room from ragged=, else 1 KiB of values)."""
    import numpy as np
    by_name = isinstance(fields, dict)
    if by_name:
        fields = [(name,) + tuple(spec) for name, spec in fields.items()]
    rooms = _rooms(ragged)
    out, leaves, used = [], [], set()
    for field in fields:
        try:
            name, dtype, shape = field
        except (TypeError, ValueError):
            raise Error("%s: a field is (name, dtype, shape), not %r" % (what, field)) from None
        name, dtype, shape = str(name), str(dtype), tuple(shape)
        if dtype in ("str", "bytes") or (shape and shape[0] is None):
            if dtype in ("str", "bytes"):
                if len(shape) != 1 or not isinstance(shape[0], int) or shape[0] < 1:
                    raise Error("%s: field %r is %s: its shape is (bytes per sample,), not %r" % (what, name, dtype, shape))
                kind, room, dtype, rest = dtype, rooms.get(name) or shape[0], "uint8", ()
            else:
                try:
                    rest = tuple(int(d) for d in shape[1:])
                except (TypeError, ValueError):
                    raise Error("%s: field %r has shape %r: only its first dimension may vary (None)"
                                % (what, name, shape)) from None
                row_bytes = np.dtype(dtype).itemsize * int(np.prod(rest, dtype=np.int64)) if dtype in DTYPES else 1
                kind, room = "array", rooms.get(name) or _room(0, row_bytes)
            used.add(name)
            out.append((name, dtype, (room,) + rest))
            out.append((name + LENGTHS, "int64", ()))
            leaves.append(Ragged(RAGGED_TAG, kind, len(out) - 2, len(out) - 1))
        else:
            try:
                out.append((name, dtype, tuple(int(d) for d in shape)))
            except (TypeError, ValueError):
                raise Error("%s: field %r has shape %r, not a tuple of ints" % (what, name, shape)) from None
            leaves.append(len(out) - 1)
    _check_names(out, rooms, used, what)
    if by_name:
        return {field[0]: leaf for field, leaf in zip(fields, leaves)}, out
    return leaves, out  # values by position, named as declared


def _check_names(fields, rooms, used, what):
    names = [name for name, _, _ in fields]
    if len(set(names)) != len(names):
        raise Error("%s: two fields would be named alike (%s): a key holds a '.'" % (what, ", ".join(names)))
    unknown = sorted(set(rooms) - used)
    if unknown:
        raise Error("ragged= names %s, which %s does not hold as a variable-length leaf (its fields: %s)"
                    % (", ".join(map(repr, unknown)), what, ", ".join(n for n in names if not n.endswith(LENGTHS))))


def has_ragged(tree):
    if isinstance(tree, Ragged):
        return True
    if isinstance(tree, int):
        return False
    return any(has_ragged(child) for child in (tree.values() if isinstance(tree, dict) else tree))


def own_containers(tree):
    """Whether a tuple node of the tree is built as something else (a
    namedtuple, a list): the batch is then shaped in Python."""
    if isinstance(tree, dict):
        return any(own_containers(child) for child in tree.values())
    if isinstance(tree, list):
        return getattr(tree, "make", tuple) is not tuple or any(own_containers(child) for child in tree)
    return False


def flat(tree):
    """True where every field of the tree sits right under its top (or is it)."""
    if isinstance(tree, Ragged):
        return False
    if isinstance(tree, int):
        return True
    children = tree.values() if isinstance(tree, dict) else tree
    return all(isinstance(child, int) for child in children)


# torch (1.13, Debian's) has no unsigned integer past uint8: such a field
# reaches format "torch" widened, a copy, to the signed type that holds
# every value (uint64 checked: past int64's range is an error).
_TORCH_WIDER = {"uint16": "int32", "uint32": "int64", "uint64": "int64"}


def _torch_widened(dtype, name):
    import numpy as np
    import torch
    wider = np.dtype(_TORCH_WIDER[dtype])

    def adopt(a):
        values = np.from_dlpack(a)
        if dtype == "uint64" and (values.view(np.int64) < 0).any():  # 2**63 and past
            raise Error("field %r holds a uint64 value past int64's range, which torch cannot hold: "
                        "use format='numpy' (or 'dlpack')" % name)
        return torch.from_numpy(values.astype(wider))
    return adopt


def converter(fmt, dtype, name=None):
    """sluice.Array -> what format `fmt` delivers, without a copy (but for
    torch's missing unsigned types, above)."""
    if fmt == "torch":
        import torch
        if dtype == "bool":  # DLPack carries a bool field as uint8 (sluice/dlpack.h)
            return lambda a: torch.from_dlpack(a).view(torch.bool)
        if dtype in _TORCH_WIDER and getattr(torch, dtype, None) is None:
            return _torch_widened(dtype, name)
        return torch.from_dlpack
    if fmt == "numpy":
        import numpy as np
        if dtype == "bool":
            return lambda a: np.from_dlpack(a).view(np.bool_)
        return np.from_dlpack
    return None


def _lengths(values, lengths, name):
    """The lengths field as a list, checked against the values' room (a worker
    that wrote past its sample would be caught here, in the parent)."""
    import numpy as np
    counts = np.from_dlpack(lengths).tolist()
    room = np.from_dlpack(values).shape[1]
    for j, n in enumerate(counts):
        if not 0 <= n <= room:
            raise Error("a batch's field %r says sample row %d holds %d entries, outside its room of %d: "
                        "the worker that made it wrote past its sample" % (name + LENGTHS, j, n, room))
    return counts


def ragged_builder(leaf, fmt, name, dtype):
    """A function from a batch's fields to the leaf's values, per sample."""
    import numpy as np
    v, n = leaf.values, leaf.lengths
    if leaf.kind in ("str", "bytes"):
        text = leaf.kind == "str"

        def build(fields):
            counts = _lengths(fields[v], fields[n], name)
            rows = np.from_dlpack(fields[v])
            out = [rows[j, :count].tobytes() for j, count in enumerate(counts)]
            if text:
                try:
                    return [b.decode("utf-8", "surrogatepass") for b in out]
                except UnicodeDecodeError as error:
                    raise Error("a batch's field %r is not UTF-8 (%s): the worker that made it wrote past "
                                "its sample" % (name, error)) from None
            return out
        return build
    if fmt == "dlpack":
        return lambda fields: (fields[v], fields[n])
    adopt = converter(fmt, dtype, name)

    def build(fields):
        counts = _lengths(fields[v], fields[n], name)
        rows = adopt(fields[v])
        return [rows[j, :count] for j, count in enumerate(counts)]
    return build


def builder(tree, fields, fmt):
    """A function from a batch's fields (a tuple, in field order) to the
    sample's shape in format fmt; fields: [(name, dtype, shape)]."""
    return _builder(tree, [converter(fmt, dtype, name) for name, dtype, _ in fields], fmt, fields)


def _builder(tree, converts, fmt, fields):
    if isinstance(tree, Ragged):
        name, dtype, _ = fields[tree.values]
        return ragged_builder(tree, fmt, name, dtype)
    if isinstance(tree, int):
        convert = converts[tree]
        if convert is None:
            return lambda fields: fields[tree]
        return lambda fields: convert(fields[tree])
    if isinstance(tree, dict):
        items = [(key, _builder(child, converts, fmt, fields)) for key, child in tree.items()]
        return lambda values: {key: build(values) for key, build in items}
    parts = [_builder(child, converts, fmt, fields) for child in tree]
    make = getattr(tree, "make", tuple)
    return lambda fields: make([build(fields) for build in parts])
