"""examples/python/pretrain_gpt.py trains a tiny GPT from packed token batches, briefly, from a
token file and from text tokenized in sluice's workers, and its loss goes down."""
import re
import shutil
import subprocess
import sys

import pytest

from conftest import REPO


@pytest.mark.parametrize("source,pack", [("tokens", "concat"), ("text", "best_fit")])
def test_pretrain_example_learns(source, pack):
    if source == "text" and shutil.which("spm_train") is None:
        pytest.skip("spm_train not found (Debian package sentencepiece)")
    script = REPO / "examples" / "python" / "pretrain_gpt.py"
    run = subprocess.run([sys.executable, str(script), "--from", source, "--pack", pack, "--steps", "40",
                          "--log-every", "20"], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"({pack}" in run.stdout, run.stdout
    match = re.search(r"loss (\d+\.\d+) -> (\d+\.\d+) in 40 steps", run.stdout)
    assert match and float(match[2]) < float(match[1]), run.stdout
