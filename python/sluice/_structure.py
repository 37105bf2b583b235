"""A sample's structure: its fields, where each lies, and batches built back in
that shape (as sluice.Array, torch tensors or NumPy arrays).

Dicts and tuples nest; a list counts as a tuple at the top of a sample (as a
sequence's (x, y)) and is an array below it; anything else is one field,
whatever NumPy makes of it (an int label is an int64 field). A field's name is
its path: "image" for a dict's key, "0" for a tuple's first item, "meta.label"
or "1.0" below. The description given to the extension is the tree of field
indices: an int, a dict {key: tree} or a list [tree].
"""
from ._sluice import Error

# NumPy dtype names sluice carries (sluice/dtype.h, less bfloat16).
DTYPES = ("bool", "uint8", "int8", "uint16", "int16", "uint32", "int32", "uint64", "int64",
          "float16", "float32", "float64")
FORMATS = ("dlpack", "torch", "numpy")


def describe(value, what, sequence):
    """(tree, fields) of a sample or a sequence's batch; fields: [(name, dtype, shape)]."""
    import numpy as np
    fields = []

    def walk(v, path, label, top):
        if isinstance(v, dict):
            tree = {}
            for key in v:
                if not isinstance(key, str):
                    raise Error("%s%s has the key %r: a sample's keys must be str" % (what, label, key))
                tree[key] = walk(v[key], path + [key], "%s[%r]" % (label, key), False)
            return tree
        if isinstance(v, tuple) or (top and isinstance(v, list)):
            return [walk(item, path + [str(i)], "%s[%d]" % (label, i), False) for i, item in enumerate(v)]
        try:
            a = np.asarray(v)
        except Exception as error:
            raise Error("%s%s is %s, which is not an array: %s" % (what, label, type(v).__name__, error)) from None
        if a.dtype.name not in DTYPES:
            raise Error("%s%s is %s, which sluice does not carry (%s)" % (what, label, a.dtype, ", ".join(DTYPES)))
        if sequence and a.ndim == 0:
            raise Error("%s%s is a scalar: a sequence's batch has rows" % (what, label))
        fields.append((".".join(path) if path else "0", a.dtype.name, tuple(int(d) for d in a.shape)))
        return len(fields) - 1

    tree = walk(value, [], "", True)
    names = [name for name, _, _ in fields]
    if len(set(names)) != len(names):
        raise Error("%s: two fields would be named alike (%s): a key holds a '.'" % (what, ", ".join(names)))
    return tree, fields


def flat(tree):
    """True where every field of the tree sits right under its top (or is it)."""
    if isinstance(tree, int):
        return True
    children = tree.values() if isinstance(tree, dict) else tree
    return all(isinstance(child, int) for child in children)


def converter(fmt, dtype):
    """sluice.Array -> what format `fmt` delivers, without a copy."""
    if fmt == "torch":
        import torch
        if dtype == "bool":  # DLPack carries a bool field as uint8 (sluice/dlpack.h)
            return lambda a: torch.from_dlpack(a).view(torch.bool)
        return torch.from_dlpack
    if fmt == "numpy":
        import numpy as np
        if dtype == "bool":
            return lambda a: np.from_dlpack(a).view(np.bool_)
        return np.from_dlpack
    return None


def builder(tree, converts):
    """A function from a batch's fields (a tuple, in field order) to the
    sample's shape; converts[f] turns field f into what is delivered."""
    if isinstance(tree, int):
        convert = converts[tree]
        if convert is None:
            return lambda fields: fields[tree]
        return lambda fields: convert(fields[tree])
    if isinstance(tree, dict):
        items = [(key, builder(child, converts)) for key, child in tree.items()]
        return lambda fields: {key: build(fields) for key, build in items}
    parts = [builder(child, converts) for child in tree]
    return lambda fields: tuple(build(fields) for build in parts)
