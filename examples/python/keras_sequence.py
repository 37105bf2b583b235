"""A Keras-style Sequence, unchanged, feeding a PyTorch training loop through Sluice.

    venv/bin/python examples/python/keras_sequence.py                 # 128 batches of 64 x 224 x 224 x 3 through Sluice
    venv/bin/python examples/python/keras_sequence.py --compare       # then the same through torch's DataLoader, and the speed-up
    venv/bin/python examples/python/keras_sequence.py --batch-size 256   # the original's size (150 MB batches)

DataSequence is the well-known example of a slow Keras Sequence under
use_multiprocessing=True: every batch is random images. Its only change here is
the batch size (64 rather than 256, so that a batch is 38.5 MB). Sluice runs it
in forked worker processes (each a copy of this interpreter) that write every
batch once into shared memory; the training loop takes it with torch.from_dlpack,
without a copy. DataLoader (batch_size=None: the sequence makes whole batches)
pickles each batch into fresh shared memory instead.

np.random.rand in forked workers draws from the state each worker inherited: two
workers make the same "random" batches, and which batch gets which depends on
timing. That is the example's, kept as it is; for reproducible randomness use
sluice.rng() (keyed by seed, epoch and batch index) in __getitem__.
"""

import argparse
import time

import numpy as np
import torch

import sluice

try:
    from keras.utils import Sequence
except ImportError:  # Keras is not needed: a Sequence is __len__ and __getitem__
    Sequence = object

BATCH_SIZE = 64  # the original: 256


class DataSequence(Sequence):
    def __len__(self):
        return 128

    def __getitem__(self, idx):
        x = np.random.rand(BATCH_SIZE, 224, 224, 3).astype("float32")
        y = np.random.randint(0, 10, BATCH_SIZE)
        return x, y


def train(batches, model, optimizer, limit):
    """One pass of the training loop over (x, y) batches; returns (batches, seconds after the first, loss)."""
    count, start, loss = 0, None, None
    for x, y in batches:
        x = torch.from_dlpack(x) if not torch.is_tensor(x) else x  # Sluice: zero copy
        y = torch.from_dlpack(y) if not torch.is_tensor(y) else y
        images = x.permute(0, 3, 1, 2)  # NHWC -> NCHW, a view
        loss = torch.nn.functional.cross_entropy(model(images), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        count += 1
        if count == 1:
            start = time.perf_counter()  # from the first batch on: the workers are up
        if count == limit:
            break
    return count, time.perf_counter() - start, float(loss)


def main():
    global BATCH_SIZE
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=BATCH_SIZE)
    parser.add_argument("--batches", type=int, default=128, help="batches to train on (at most the 128 of an epoch)")
    parser.add_argument("--compare", action="store_true", help="also run torch's DataLoader and print the speed-up")
    args = parser.parse_args()
    BATCH_SIZE = args.batch_size

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.AvgPool2d(8), torch.nn.Flatten(), torch.nn.Linear(3 * 28 * 28, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    megabytes = BATCH_SIZE * 224 * 224 * 3 * 4 / 1e6
    sequence = DataSequence()

    loader = sluice.Loader(sequence=sequence, workers=args.workers, epochs=1)
    count, seconds, loss = train(loader, model, optimizer, args.batches)
    loader.close()
    ours = (count - 1) / seconds
    print(f"sluice:     {count} batches of {megabytes:.1f} MB, {ours:.2f} batches/s ({ours * megabytes / 1e3:.2f} GB/s), "
          f"loss {loss:.3f}")
    if args.compare:
        torch_loader = torch.utils.data.DataLoader(sequence, batch_size=None, num_workers=args.workers)
        count, seconds, loss = train(torch_loader, model, optimizer, args.batches)
        theirs = (count - 1) / seconds
        print(f"DataLoader: {count} batches of {megabytes:.1f} MB, {theirs:.2f} batches/s "
              f"({theirs * megabytes / 1e3:.2f} GB/s), loss {loss:.3f}")
        print(f"speed-up: {ours / theirs:.1f}x")


if __name__ == "__main__":
    main()
