"""examples/python/lightning_shape.py and hf_map.py: they run, and their batches are the same for any worker count."""
import importlib.util
import re
import subprocess
import sys

import torch

import sluice
from conftest import REPO

EXAMPLES = REPO / "examples" / "python"


def load(name):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / (name + ".py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_lightning_shaped_module_trains_in_a_plain_loop():
    run = subprocess.run([sys.executable, str(EXAMPLES / "lightning_shape.py"), "--epochs", "3"],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    accuracy = [float(a) for a in re.findall(r"validation accuracy (\d\.\d+)", run.stdout)]
    assert len(accuracy) == 3 and accuracy[-1] > 0.9, run.stdout


def test_the_lightning_shaped_module_resumes_mid_epoch():
    example = load("lightning_shape")
    data = example.BlobsDataModule(num_workers=2)
    data.setup()
    train = data.train_dataloader()
    it = iter(train)
    for _ in range(10):
        next(it)
    state = data.state_dict()
    rest = [y.tolist() for _, y in it]
    again = example.BlobsDataModule(num_workers=1)
    again.setup()
    again.load_state_dict(state)
    assert [y.tolist() for _, y in again.train_dataloader()] == rest


def test_the_hf_style_map_dataset_is_the_same_for_any_worker_count():
    example = load("hf_map")

    def batches(workers):
        loader = sluice.Loader(example.build(), batch_size=8, shuffle=True, seed=0, num_workers=workers, format="torch")
        return [{k: v.clone() for k, v in b.items()} for b in loader]

    zero, two = batches(0), batches(2)
    assert len(zero) == 8
    for a, b in zip(zero, two):
        assert set(a) == {"input_ids", "attention_mask", "label"}
        assert all(torch.equal(a[k], b[k]) for k in a)
    masks = torch.cat([b["attention_mask"] for b in two])
    assert len({tuple(m.tolist()) for m in masks}) > 16  # word dropout differs per sample
    run = subprocess.run([sys.executable, str(EXAMPLES / "hf_map.py")], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and "8 batches an epoch" in run.stdout, run.stdout + run.stderr
