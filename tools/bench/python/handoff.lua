-- handoff.lua (tools/bench/python_bench.py): one sample per batch, a 256 x 256
-- uint8 field whose first 8 bytes are the sample id, as tools/bench/handoff.cpp
-- makes them. One sample per batch keeps Lua's per-sample work out of the
-- measurement, as batch_size=None does on the DataLoader side.
local sluice = require("sluice")
local ffi = require("ffi")

return sluice.pipeline {
  source = sluice.range(1000000000),
  batch_size = 1,
  fields = { { "x", "uint8", { 256, 256 } } },
  map = function(i, ctx)
    local x = ctx.out.x
    ffi.cast("int64_t*", x.data)[0] = i
    return { x = x }
  end,
  workers = 2,
  prefetch = 64,
  epochs = 1,
}
