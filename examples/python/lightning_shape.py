"""A LightningDataModule-shaped class over Sluice, trained by a plain loop.

    venv/bin/python examples/python/lightning_shape.py [--epochs 3] [--workers 2]

PyTorch Lightning is not in Debian, so this class has the shape a
LightningDataModule has (setup, train_dataloader, val_dataloader,
state_dict, load_state_dict) without inheriting from it; with Lightning
installed, subclass pl.LightningDataModule and hand it to Trainer.fit as is.
A Sluice Loader is what train_dataloader returns: `for batch in loader` is one
epoch (Lightning loops over it once per epoch), len(loader) its batches, and
format="torch" yields tensors as the dataset returns them. Its state_dict()
goes into the checkpoint, so a resumed run continues mid-epoch exactly.
"""
import argparse

import numpy as np
import torch

import sluice


class Blobs(torch.utils.data.Dataset):
    """Two Gaussian blobs in 8 dimensions, label 0 or 1, with random jitter
    (torch.randn: seeded per sample by Sluice, different in every sample)."""

    def __init__(self, n, seed):
        rng = np.random.default_rng(seed)
        self.y = rng.integers(0, 2, n)
        self.x = (rng.standard_normal((n, 8)) + 2.0 * self.y[:, None]).astype(np.float32)

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        jitter = 0.05 * torch.randn(8)
        return torch.from_numpy(self.x[i]).add(jitter).numpy(), int(self.y[i])


class BlobsDataModule:  # with Lightning: class BlobsDataModule(pl.LightningDataModule)
    def __init__(self, batch_size=32, num_workers=2):
        self.batch_size, self.num_workers = batch_size, num_workers
        self._train = None

    def setup(self, stage=None):
        self.train_set, self.val_set = Blobs(2048, seed=0), Blobs(512, seed=1)

    def train_dataloader(self):
        if self._train is None:  # one loader for the run: its workers persist across epochs
            self._train = sluice.Loader(self.train_set, batch_size=self.batch_size, shuffle=True, seed=0,
                                        num_workers=self.num_workers, drop_last=True, format="torch")
        return self._train

    def val_dataloader(self):
        return sluice.Loader(self.val_set, batch_size=256, num_workers=1, format="torch")

    def state_dict(self):  # Lightning saves it in the checkpoint
        return {"train": self.train_dataloader().state_dict()}

    def load_state_dict(self, state):
        self.train_dataloader().load_state_dict(state["train"])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    torch.manual_seed(0)
    data = BlobsDataModule(num_workers=args.workers)
    data.setup("fit")
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    train = data.train_dataloader()
    for epoch in range(args.epochs):  # what Trainer.fit does, without Lightning
        total = 0.0
        for x, y in train:
            loss = torch.nn.functional.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.item()
        correct = seen = 0
        with torch.no_grad():
            for x, y in data.val_dataloader():
                correct += (model(x).argmax(1) == y).sum().item()
                seen += len(y)
        print("epoch %d: %d batches, mean loss %.4f, validation accuracy %.3f"
              % (epoch, len(train), total / len(train), correct / seen))


if __name__ == "__main__":
    main()
