"""A Hugging Face datasets-style `map` dataset through Sluice.

    venv/bin/python examples/python/hf_map.py [--workers 2]

`datasets` is not in Debian, so MapDataset below has the shape of a
datasets.Dataset: rows of dicts, ds.map(fn) returns a new dataset whose rows
are fn(row), and ds.with_format("numpy") hands out arrays. The map runs lazily
in Sluice's workers (as datasets' set_transform does), per sample, so a random
augmentation in it is seeded per sample by Sluice: the same batches whatever
the worker count. Rows come back as a dict of tensors (format="torch").
"""
import argparse
import random

import numpy as np

import sluice


class MapDataset:
    """Rows of dicts; map(fn) chains fn lazily, as set_transform does."""

    def __init__(self, columns, transforms=()):
        self.columns, self.transforms = columns, tuple(transforms)

    @classmethod
    def from_dict(cls, columns):
        return cls({name: list(values) for name, values in columns.items()})

    def map(self, fn):
        return MapDataset(self.columns, self.transforms + (fn,))

    def __len__(self):
        return len(next(iter(self.columns.values())))

    def __getitem__(self, i):
        row = {name: values[i] for name, values in self.columns.items()}
        for fn in self.transforms:
            row = fn(row)
        return row


def tokenize(row, length=16):
    ids = [1 + (ord(c) % 250) for c in row["text"]][:length]
    return {"input_ids": np.array(ids + [0] * (length - len(ids)), np.int64),
            "attention_mask": np.array([1] * len(ids) + [0] * (length - len(ids)), np.int64),
            "label": row["label"]}


def word_dropout(row):
    keep = np.array([random.random() > 0.1 for _ in row["input_ids"]])  # Python's random: seeded per sample
    return dict(row, attention_mask=row["attention_mask"] * keep)


def build():
    texts = ["sluice feeds training", "batches without copies", "a python dataset", "forked workers"] * 16
    return MapDataset.from_dict({"text": texts, "label": [i % 2 for i in range(len(texts))]}).map(tokenize).map(word_dropout)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    loader = sluice.Loader(build(), batch_size=8, shuffle=True, seed=0, num_workers=args.workers, format="torch")
    for batch in loader:
        print({name: tuple(t.shape) for name, t in batch.items()}, "labels", batch["label"].tolist())
        break
    print("%d batches an epoch" % len(loader))


if __name__ == "__main__":
    main()
