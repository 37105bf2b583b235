-- synthetic.lua: the dataset sluice_trainer makes in C++ when given no
-- pipeline, written as a pipeline.lua.
--
--   sluice_trainer examples/trainer/synthetic.lua
--
-- 60000 samples of an 8x8 RGB uint8 image and an int32 label in 0..9. Each
-- image is its class's pattern (a brightness per channel and stripes, across
-- or down) plus noise from ctx.rng. The trainer copies the uint8 images to the
-- GPU and normalizes them there.
local sluice = require("sluice")

local H, W, C = 8, 8, 3
local CLASSES = 10

return sluice.pipeline {
  source = sluice.range(60000),
  shuffle = true,
  seed = 7,
  batch_size = 256,
  fields = {
    { "image", "uint8", { H, W, C } },
    { "label", "int32" },
  },
  map = function(i, ctx)
    local label = (i * 7919) % CLASSES
    local image = ctx.out.image
    local px, rng = image.data, ctx.rng
    for y = 0, H - 1 do
      for x = 0, W - 1 do
        local stripe = ((label % 2 == 1) and x or y) % 2 == 0
        for c = 0, C - 1 do
          local v = 40 + 18 * ((label + c * 3) % CLASSES) + (stripe and 30 or 0) + 15 * rng:normal()
          px[(y * W + x) * C + c] = math.max(0, math.min(255, math.floor(v)))
        end
      end
    end
    return { image = image, label = label }
  end,
  workers = 2,
  epochs = 5,
}
