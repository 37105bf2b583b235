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
    if source == "text" and "built without SentencePiece" in run.stdout + run.stderr:
        pytest.skip("this build has no SentencePiece (configured with -DSLUICE_SENTENCEPIECE=OFF)")
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"({pack}" in run.stdout, run.stdout
    match = re.search(r"loss (\d+\.\d+) -> (\d+\.\d+) in 40 steps", run.stdout)
    assert match and float(match[2]) < float(match[1]), run.stdout


def test_packed_batches_resume_with_another_worker_count(tmp_path, monkeypatch):
    """examples/pretrain.lua from Python: the packed fields as tensors, and a checkpoint taken
    mid-epoch resumes on another worker count with the same batches."""
    import numpy as np
    import torch

    import sluice

    rng = np.random.default_rng(1)
    docs = [np.append(rng.integers(1, 1000, int(rng.integers(5, 90))), 0) for _ in range(300)]
    corpus = tmp_path / "corpus.bin"
    np.concatenate(docs).astype(np.uint16).tofile(corpus)
    monkeypatch.setenv("PRETRAIN_CORPUS", str(corpus))
    monkeypatch.setenv("PRETRAIN_SEQ_LEN", "32")
    monkeypatch.setenv("PRETRAIN_PACK", "best_fit")
    pipeline = str(REPO / "examples" / "pretrain.lua")

    def rows(batch):
        return tuple(torch.from_dlpack(batch[k]).numpy().tobytes()
                     for k in ("tokens", "targets", "segment_ids", "positions", "loss_mask"))

    a = sluice.Loader(pipeline, workers=2)
    it = iter(a)
    first = next(it)
    tokens = torch.from_dlpack(first["tokens"])
    assert tokens.dtype == torch.int64 and tokens.shape == (16, 32)
    assert torch.from_dlpack(first["loss_mask"]).dtype == torch.float32
    for _ in range(3):
        next(it)
    state = a.state_dict()
    rest = [rows(b) for b in it]
    assert rest
    b = sluice.Loader(pipeline, workers=3)
    b.load_state_dict(state)
    assert [rows(batch) for batch in b] == rest
