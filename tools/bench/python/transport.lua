-- transport.lua (tools/bench/python_bench.py): 64 MiB batches, 64 samples of
-- 1 MiB float32 each, every byte written by the worker (memset, as
-- tools/bench/transport.cpp's std::fill_n): byte value 1 + batch % 250.
local sluice = require("sluice")
local ffi = require("ffi")

local FLOATS = 262144  -- 1 MiB

return sluice.pipeline {
  source = sluice.range(1000000000),
  batch_size = 64,
  fields = { { "x", "float32", { FLOATS } } },
  map = function(i, ctx)
    local x = ctx.out.x
    ffi.fill(x.data, FLOATS * 4, 1 + math.floor(i / 64) % 250)
    return { x = x }
  end,
  workers = 2,
  prefetch = 6,  -- 2 * workers + 2, as tools/bench/transport.cpp
  epochs = 1,
}
