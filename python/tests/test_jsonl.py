"""JSON lines from a pipeline.lua (sluice.jsonl) through sluice.Loader: text as bytes, other keys beside it."""
import gzip
import json

import numpy as np
import pytest

import sluice

PIPELINE = """
local sluice = require("sluice")
local ffi = require("ffi")
return sluice.pipeline {
  source = sluice.jsonl { "corpus.jsonl.gz" },
  shuffle = true, seed = 3, batch_size = 5, workers = 2,
  fields = { { "id", "int64" }, { "nbytes", "int64" }, { "head", "uint8", { 4 } } },
  map = function(s, ctx)
    local id = tonumber(ffi.string(s.fields.id.data, s.fields.id.nbytes))
    for k = 0, 3 do ctx.out.head.data[k] = s.bytes.data[k] end
    return { id = id, nbytes = s.bytes.nbytes, head = ctx.out.head }
  end,
}
"""


def test_gzip_json_lines_reach_map_as_utf8_bytes(tmp_path):
    texts = ["d\u00e9j\u00e0 vu %d" % i for i in range(23)]
    with gzip.open(tmp_path / "corpus.jsonl.gz", "wt", encoding="utf-8") as f:
        for i, t in enumerate(texts):  # json.dumps escapes the accents as \\u00e9: the reader unescapes them
            f.write(json.dumps({"id": i, "text": t}) + "\n")
    (tmp_path / "p.lua").write_text(PIPELINE)
    loader = sluice.Loader(str(tmp_path / "p.lua"), epochs=1)
    seen = {}
    for batch in loader:
        ids = np.from_dlpack(batch["id"])
        nbytes = np.from_dlpack(batch["nbytes"])
        head = np.from_dlpack(batch["head"])
        for j, i in enumerate(ids):
            seen[int(i)] = (int(nbytes[j]), bytes(head[j]))
    assert sorted(seen) == list(range(23))
    for i, (n, head) in seen.items():
        utf8 = texts[i].encode("utf-8")
        assert n == len(utf8)
        assert head == utf8[:4]


def test_a_cut_gzip_file_under_skip_warns_of_the_lines_left_out(tmp_path):
    with gzip.open(tmp_path / "whole.jsonl.gz", "wt", encoding="utf-8") as f:
        for i in range(3000):
            f.write(json.dumps({"id": i, "text": "line %d %s" % (i, "x" * 40)}) + "\n")
    data = (tmp_path / "whole.jsonl.gz").read_bytes()
    (tmp_path / "corpus.jsonl.gz").write_bytes(data[: len(data) * 2 // 3])  # cut mid-stream
    (tmp_path / "p.lua").write_text(PIPELINE.replace("workers = 2,", "workers = 1, on_error = \"skip\","))
    with pytest.warns(RuntimeWarning, match=r"corpus\.jsonl\.gz: the gzip stream is cut short") as seen:
        loader = sluice.Loader(str(tmp_path / "p.lua"), epochs=1)
    assert len([w for w in seen if issubclass(w.category, RuntimeWarning)]) == 1
    ids = sorted(int(i) for batch in loader for i in np.from_dlpack(batch["id"]))
    assert 0 < len(ids) < 3000
    assert ids == list(range(len(ids)))  # the whole lines before the cut, each once
    assert loader.info["left_out"] == [n for n in loader.info["notes"] if "cut short" in n]
