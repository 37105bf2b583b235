-- imagenet_split.lua: examples/imagenet.lua as it was before image.decode_crop,
-- for the benchmark (run.sh): the whole image decoded at the DCT scale that
-- keeps the crop >= 224 px, the crop resized into scratch, then normalized.
local sluice = require("sluice")
local image = require("sluice.image")

local SIZE = 224

return sluice.pipeline {
  source = sluice.folders("train"),
  map = function(s, ctx)
    local info = image.info(s.bytes, s.path)
    local box = image.random_resized_crop(info.width, info.height, ctx.rng)
    local img = image.decode(s.bytes, { name = s.path, channels = 3, scale = image.shrink(box, SIZE, SIZE) })
    local crop = image.resize(img, ctx:tensor("uint8", { SIZE, SIZE, 3 }), { box = box })
    image.normalize(crop, ctx.out.image, {
      mean = image.IMAGENET_MEAN, std = image.IMAGENET_STD, flip = ctx.rng:bernoulli(0.5),
    })
    return { image = ctx.out.image, label = s.label }
  end,
  fields = { { "image", "float32", { 3, SIZE, SIZE } }, { "label", "int64" } },
  batch_size = 64,
  shuffle = true,
  workers = 2,
  on_error = "fail",
}
