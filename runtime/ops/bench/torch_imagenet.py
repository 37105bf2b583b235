"""The PyTorch side of the issue-8 benchmark: the same pipeline as
examples/imagenet.lua with PIL + torchvision in PyTorch's DataLoader.

    /usr/bin/python3 torch_imagenet.py ROOT WORKERS EPOCHS

ROOT/train/CLASS/*.jpg; RandomResizedCrop(224) + RandomHorizontalFlip +
ToTensor + Normalize(ImageNet), batches of 64, shuffled, float32 (float16
would add a conversion pass on this side). Prints one JSON line timed like
ops_imagenet_bench: everything after the first batch.
"""
import json
import sys
import time

import torch
from torch.utils.data import DataLoader
from torchvision import datasets, transforms


def main():
    root, workers, epochs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    torch.set_num_threads(1)
    transform = transforms.Compose([
        transforms.RandomResizedCrop(224),
        transforms.RandomHorizontalFlip(),
        transforms.ToTensor(),
        transforms.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225]),
    ])
    dataset = datasets.ImageFolder(root + "/train", transform=transform)
    loader = DataLoader(dataset, batch_size=64, shuffle=True, num_workers=workers,
                        persistent_workers=True, prefetch_factor=2)
    images, start = 0, None
    for _ in range(epochs):
        for batch, _labels in loader:
            if start is None:
                start = time.perf_counter()
                continue
            images += batch.shape[0]
    seconds = time.perf_counter() - start
    print(json.dumps({"side": "torch", "workers": workers, "images": images, "seconds": round(seconds, 3),
                      "images_per_s": round(images / seconds, 1),
                      "images_per_s_per_worker": round(images / seconds / workers, 1)}))


if __name__ == "__main__":
    main()
