"""examples/python/train_torch.py runs, briefly, and its loss goes down."""
import re
import subprocess
import sys

from conftest import REPO


def test_train_torch_example_runs_and_learns(tmp_path):
    script = REPO / "examples" / "python" / "train_torch.py"
    checkpoint = tmp_path / "ckpt.pt"
    run = subprocess.run([sys.executable, str(script), "--steps", "60", "--log-every", "20",
                          "--checkpoint", str(checkpoint)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    match = re.search(r"loss (\d+\.\d+) -> (\d+\.\d+) over 60 steps", run.stdout)
    assert match and float(match[2]) < float(match[1]), run.stdout
    # Resuming from the checkpoint continues at step 60, in the middle of epoch 0.
    more = subprocess.run([sys.executable, str(script), "--steps", "80", "--log-every", "10",
                           "--checkpoint", str(checkpoint)], capture_output=True, text=True, timeout=300)
    assert "resumed at step 60 (epoch 0)" in more.stdout, more.stdout + more.stderr
    assert "over 80 steps; 20 batches" in more.stdout, more.stdout


def test_keras_sequence_example_trains_through_sluice():
    script = REPO / "examples" / "python" / "keras_sequence.py"
    run = subprocess.run([sys.executable, str(script), "--batch-size", "8", "--batches", "6"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    assert re.search(r"sluice: +6 batches of 4\.8 MB, [\d.]+ batches/s", run.stdout), run.stdout
