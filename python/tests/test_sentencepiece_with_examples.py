"""One Python process loads SentencePiece (python3-sentencepiece and, through
sluice, Debian's libsentencepiece with its bundled protobuf-lite) and writes and
reads tf.train.Example TFRecords through sluice. While sluice linked
libprotobuf-lite, one library bound into the other's copy here and crashed;
sluice now decodes and encodes Examples itself. The ids sluice's workers make
from the Examples' text equal python3-sentencepiece's for the same text."""
import pathlib
import shutil
import subprocess

import numpy as np
import pytest

import sluice

LICENSES = pathlib.Path("/usr/share/common-licenses")
MAX = 256


class Lines:
    """Lines of the Apache license as bytes, with their index as the label."""

    def __init__(self):
        text = (LICENSES / "Apache-2.0").read_text()
        self.lines = [line.strip().encode() for line in text.splitlines() if line.strip()][:24]

    def __len__(self):
        return len(self.lines)

    def __getitem__(self, i):
        return {"text": self.lines[i], "label": i}


def test_sentencepiece_and_tfrecord_examples_share_one_process(tmp_path):
    spm = pytest.importorskip("sentencepiece", reason="python3-sentencepiece (the oracle) is not installed")
    if shutil.which("spm_train") is None:
        pytest.skip("spm_train not found (Debian package sentencepiece)")
    if not (LICENSES / "GPL-3").exists():
        pytest.skip("%s/GPL-3 is missing" % LICENSES)
    subprocess.run(["spm_train", "--input=%s/GPL-3,%s/Apache-2.0" % (LICENSES, LICENSES),
                    "--model_prefix=%s" % (tmp_path / "m"), "--vocab_size=500", "--byte_fallback=true",
                    "--minloglevel=2"], check=True, capture_output=True)
    oracle = spm.SentencePieceProcessor(model_file=str(tmp_path / "m.model"))

    # Examples written in this process, with libsentencepiece already loaded.
    ds = Lines()
    manifest = sluice.write(ds, tmp_path / "shards", format="tfrecord", shard_samples=10, workers=1,
                            batch_size=4, ragged={"text": 1 << 12})
    assert manifest["samples"] == len(ds) and len(manifest["shards"]) == 3

    # Loaded here (the script's top level) and in the worker, which decodes each
    # Example and tokenizes its text.
    (tmp_path / "read.lua").write_text("""local ffi = require("ffi")
local sluice = require("sluice")
local tok = sluice.sentencepiece("m.model")
local MAX = %d
return sluice.pipeline {
  source = sluice.tfrecord{ "shards/*.tfrecord" }, batch_size = 1, workers = 1,
  fields = { { "ids", "int32", { MAX } }, { "count", "int64" }, { "label", "int64" } },
  map = function(s, ctx)
    local ex = sluice.example(s)
    local ids = tok:encode(ex:bytes("text"))
    local out = ctx.out.ids
    local n = math.min(ids.shape[1], MAX)
    for i = 0, n - 1 do out.data[i] = ids.data[i] end
    for i = n, MAX - 1 do out.data[i] = -1 end
    return { ids = out, count = ids.shape[1], label = ex:int64s("label").data[0] }
  end,
}
""" % MAX)
    loader = sluice.Loader(str(tmp_path / "read.lua"), format="numpy")
    seen = set()
    for batch in loader:
        label = int(batch["label"][0])
        want = oracle.encode(ds.lines[label])
        count = int(batch["count"][0])
        assert count == len(want) <= MAX
        assert np.asarray(batch["ids"])[0][:count].tolist() == want
        seen.add(label)
    loader.close()
    assert seen == set(range(len(ds)))
