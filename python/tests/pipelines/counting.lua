-- counting.lua: 100 samples; sample i is x = {10i, 10i+1, 10i+2, 10i+3} and id = i.
-- Batches of 8 (the last one short), shuffled, two epochs: small and fast,
-- with content a test can check against the sample ids.
local sluice = require("sluice")

return sluice.pipeline {
  source = sluice.range(100),
  shuffle = true,
  seed = 7,
  batch_size = 8,
  fields = {
    { "x", "float32", { 4 } },
    { "id", "int64" },
  },
  map = function(i, ctx)
    local x = ctx.out.x
    for k = 0, 3 do x.data[k] = 10 * i + k end
    return { x = x, id = i }
  end,
  workers = 2,
  epochs = 2,
}
