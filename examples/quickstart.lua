-- quickstart.lua: a synthetic pipeline that runs anywhere in a few seconds.
--
--   sluice run examples/quickstart.lua
--
-- 20000 samples of a 3x32x32 float32 "image" and an int64 label. The map
-- writes each image straight into its row of the batch slot (ctx.out.image),
-- with noise from ctx.rng, so sample i looks the same whatever the worker
-- count or schedule.
local sluice = require("sluice")

local C, H, W = 3, 32, 32
local CLASSES = 10

return sluice.pipeline {
  source = sluice.range(20000),  -- samples are the dataset indices 0 .. 19999
  shuffle = true,
  seed = 1234,
  batch_size = 64,
  drop_last = true,
  fields = {
    { "image", "float32", { C, H, W } },
    { "label", "int64" },
  },
  map = function(i, ctx)
    local label = i % CLASSES
    local image = ctx.out.image  -- this sample's row of the batch, in shared memory
    local px, rng = image.data, ctx.rng
    local level = label / CLASSES
    for k = 0, C * H * W - 1 do
      px[k] = level + 0.1 * rng:normal()
    end
    return { image = image, label = label }
  end,
  workers = 2,
  prefetch = 6,
  epochs = 1,
}
