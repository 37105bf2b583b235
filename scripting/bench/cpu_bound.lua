-- cpu_bound.lua: a map that only computes (no memory traffic to speak of), for
-- the benchmark's 1-worker vs 2-worker speed-up.
local sluice = require("sluice")

local sin, cos = math.sin, math.cos

return sluice.pipeline {
  source = sluice.range(1024),
  fields = { { "v", "float64", { 4 } } },
  map = function(i, ctx)
    local v = ctx.out.v
    local a, b = i * 1e-3, 0
    for k = 1, 20000 do
      a = a + sin(a + k) * 1e-3
      b = b + cos(b - k) * 1e-3
    end
    v.data[0], v.data[1], v.data[2], v.data[3] = a, b, a * b, a - b
    return { v = v }
  end,
  batch_size = 16,
  workers = 1,
  prefetch = 8,
}
