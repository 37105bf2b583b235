"""The Python sides of the ImageNet benchmark (run.sh): the pipeline of
examples/imagenet.lua written three ways a PyTorch user would.

    /usr/bin/python3 torch_imagenet.py SIDE ROOT WORKERS EPOCHS [BATCH]

ROOT/train/CLASS/*.jpg. SIDE:
- torch: PIL + torchvision in PyTorch's DataLoader: RandomResizedCrop(224) +
  RandomHorizontalFlip + ToTensor + Normalize(ImageNet), float32.
- draft: the same in the DataLoader, with PIL's DCT-scaled decode: the
  RandomResizedCrop box from the header, draft() to the smallest scale that
  keeps the crop >= 224 px, resize of the box (bilinear), flip, ToTensor,
  Normalize.
- floor: one core, no DataLoader, nothing but that DCT-scaled decode: open,
  the same kind of box, draft(), load(). The decode floor (WORKERS is ignored:
  one process).
Batches of BATCH (default 64), shuffled. Prints one JSON line timed like
sluice_imagenet_bench: everything after the first batch.
"""
import json
import math
import random
import sys
import time

import torch
from PIL import Image
from torch.utils.data import DataLoader
from torchvision import datasets, transforms

MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
SIZE = 224


def draft_box(img):
    """RandomResizedCrop's box; draft()s img to the smallest DCT scale that keeps
    it >= SIZE; returns the box in the drafted image's pixels."""
    width, height = img.size
    top, left, h, w = transforms.RandomResizedCrop.get_params(img, (0.08, 1.0), (3 / 4, 4 / 3))
    shrink = max(SIZE / w, SIZE / h)
    if shrink < 1:
        img.draft("RGB", (math.ceil(width * shrink), math.ceil(height * shrink)))
    divisor = 1
    for d in (8, 4, 2):
        if img.size == ((width + d - 1) // d, (height + d - 1) // d):
            divisor = d
            break
    return (left / divisor, top / divisor, min((left + w) / divisor, img.size[0]),
            min((top + h) / divisor, img.size[1]))


class DraftCrop:
    """The draft() pipeline for one path."""

    def __init__(self):
        self.finish = transforms.Compose([transforms.ToTensor(), transforms.Normalize(mean=MEAN, std=STD)])

    def __call__(self, path):
        img = Image.open(path)
        box = draft_box(img)
        img = img.convert("RGB").resize((SIZE, SIZE), Image.BILINEAR, box=box)
        if random.random() < 0.5:
            img = img.transpose(Image.FLIP_LEFT_RIGHT)
        return self.finish(img)


def timed(batches):
    """Images/s and images over everything after the first batch."""
    images, start = 0, None
    for n in batches:
        if start is None:
            start = time.perf_counter()
            continue
        images += n
    return images, time.perf_counter() - start


def main():
    side, root, workers, epochs = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    batch_size = int(sys.argv[5]) if len(sys.argv) > 5 else 64
    torch.set_num_threads(1)
    if side == "floor":
        files = [path for path, _ in datasets.ImageFolder(root + "/train").samples]
        workers = 1

        def batches():
            for _ in range(epochs):
                random.shuffle(files)
                for at in range(0, len(files), batch_size):
                    for path in files[at:at + batch_size]:
                        img = Image.open(path)
                        draft_box(img)
                        img.load()
                    yield len(files[at:at + batch_size])

        images, seconds = timed(batches())
    else:
        if side == "torch":
            transform = transforms.Compose([
                transforms.RandomResizedCrop(SIZE), transforms.RandomHorizontalFlip(), transforms.ToTensor(),
                transforms.Normalize(mean=MEAN, std=STD)])
            dataset = datasets.ImageFolder(root + "/train", transform=transform)
        else:
            dataset = datasets.ImageFolder(root + "/train", loader=lambda path: path, transform=DraftCrop())
        loader = DataLoader(dataset, batch_size=batch_size, shuffle=True, num_workers=workers,
                            persistent_workers=True, prefetch_factor=2)
        images, seconds = timed(batch.shape[0] for _ in range(epochs) for batch, _labels in loader)
    print(json.dumps({"side": side, "workers": workers, "images": images, "seconds": round(seconds, 3),
                      "images_per_s": round(images / seconds, 1),
                      "images_per_s_per_worker": round(images / seconds / workers, 1)}))


if __name__ == "__main__":
    main()
