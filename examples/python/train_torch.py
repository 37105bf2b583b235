"""Trains a small PyTorch MLP from a pipeline.lua, on CPU, and prints the loss going down.

    venv/bin/python examples/python/train_torch.py               # examples/quickstart.lua, 300 steps
    venv/bin/python examples/python/train_torch.py --steps 50 --workers 2 --checkpoint /tmp/ckpt.pt

(venv: the one docs/python.md makes, where the sluice package and Debian's torch both import.)

The batches come from sluice's worker processes through shared memory:
torch.from_dlpack adopts each field without a copy. Ctrl-C stops training at
once; with --checkpoint, the model, the optimizer and the loader's position are
saved then, and a later run with the same --checkpoint continues where it stopped
(the same batches the uninterrupted run would have seen next).
"""

import argparse
import os
import pathlib
import sys
import time

import torch

import sluice

REPO = pathlib.Path(__file__).resolve().parents[2]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pipeline", default=str(REPO / "examples" / "quickstart.lua"))
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--lr", type=float, default=5e-3)
    parser.add_argument("--log-every", type=int, default=25)
    parser.add_argument("--checkpoint", help="save here on Ctrl-C or at the end; resume from it if it exists")
    args = parser.parse_args()

    torch.manual_seed(0)
    loader = sluice.Loader(args.pipeline, workers=args.workers, epochs=0)  # epochs = 0: until we stop
    (_, _, image_shape), _ = loader.info["fields"]
    features = 1
    for d in image_shape:
        features *= d
    model = torch.nn.Sequential(
        torch.nn.Flatten(), torch.nn.Linear(features, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10))
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)

    step = 0
    if args.checkpoint and os.path.exists(args.checkpoint):
        checkpoint = torch.load(args.checkpoint)
        model.load_state_dict(checkpoint["model"])
        optimizer.load_state_dict(checkpoint["optimizer"])
        loader.load_state_dict(checkpoint["loader"])
        step = checkpoint["step"]
        print(f"resumed at step {step} (epoch {loader.epoch})")

    def save():
        if args.checkpoint:
            torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                        "loader": loader.state_dict(), "step": step}, args.checkpoint)

    first = last = None
    window = []
    start = time.perf_counter()
    try:
        while step < args.steps:
            for batch in loader:
                images = torch.from_dlpack(batch["image"])  # [64, 3, 32, 32] float32, in shared memory
                labels = torch.from_dlpack(batch["label"])  # [64] int64
                loss = torch.nn.functional.cross_entropy(model(images), labels)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                step += 1
                window.append(loss.item())
                if step % args.log_every == 0 or step == args.steps:
                    mean = sum(window) / len(window)
                    window.clear()
                    first = mean if first is None else first
                    last = mean
                    rate = step / (time.perf_counter() - start)
                    print(f"step {step:5d}  epoch {batch.epoch}  loss {mean:.4f}  ({rate:.0f} steps/s)", flush=True)
                if step >= args.steps:
                    break
    except KeyboardInterrupt:
        save()
        print(f"\ninterrupted at step {step}" + (f"; saved {args.checkpoint}" if args.checkpoint else ""))
        return 130
    save()
    stats = loader.stats()
    loader.close()
    print(f"loss {first:.4f} -> {last:.4f} over {step} steps; "
          f"{stats['batches_delivered']} batches, consumer waited {stats['consumer_wait_ns'] / 1e9:.2f} s")
    return 0 if last < first else 1


if __name__ == "__main__":
    sys.exit(main())
