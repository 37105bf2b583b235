"""sluice.parquet from a pipeline.lua, through sluice.Loader: the same rows the
C++ tests read from the apache/parquet-testing corpus."""
import numpy as np

import sluice
from conftest import REPO

CORPUS = REPO / "tests" / "io" / "data" / "parquet-testing" / "data"


def test_parquet_rows_reach_python_batches(tmp_path):
    script = tmp_path / "p.lua"
    script.write_text(f"""
local sluice = require('sluice')
local ffi = require('ffi')
return sluice.pipeline {{
  source = sluice.parquet{{ '{CORPUS / "alltypes_tiny_pages_plain.parquet"}', columns = {{ 'id', 'string_col' }} }},
  map = function(s, ctx)
    local text = s.fields.string_col
    return {{ id = s.fields.id.data[0], digit = tonumber(ffi.string(text.data, text.nbytes)) }}
  end,
  fields = {{ {{ 'id', 'int32' }}, {{ 'digit', 'int64' }} }},
  batch_size = 250, shuffle = true, seed = 1, workers = 2, epochs = 1,
}}
""")
    ids = []
    for batch in sluice.Loader(str(script)):
        id_ = np.from_dlpack(batch["id"]).astype(np.int64)
        assert np.array_equal(np.from_dlpack(batch["digit"]), id_ % 10)
        ids.extend(id_.tolist())
    assert sorted(ids) == list(range(7300))
