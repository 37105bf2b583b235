-- imagenet.lua: the training pipeline most vision models use, on a folder of JPEGs.
--
--   sluice run examples/imagenet.lua            (reads train/CLASS/*.jpg beside this file)
--
-- Each sample is one file under train/; its label is the index of its class
-- folder. map picks a random resized crop (8%..100% of the area, aspect ratio
-- 3/4..4/3) from the JPEG header alone; image.decode_crop then decodes only
-- the crop's pixels at the smallest DCT scale that keeps it at least 224
-- pixels on each side, resizes it to 224x224 (bilinear, antialiased as PIL),
-- and normalizes with ImageNet's mean and std into float32 CHW in the batch
-- slot (declare "float16" to halve the batch), mirrored with probability 1/2,
-- in one pass. (The same as image.decode + image.resize + image.normalize,
-- bit for bit, in less time.) Every random choice comes from ctx.rng:
-- sample i of epoch e gets the same crop and flip with any number of workers. A corrupt file raises an error naming it;
-- on_error = "skip" drops it instead.
local sluice = require("sluice")
local image = require("sluice.image")

local SIZE = 224

return sluice.pipeline {
  source = sluice.folders("train"),
  map = function(s, ctx)
    local info = image.info(s.bytes, s.path)
    local box = image.random_resized_crop(info.width, info.height, ctx.rng)
    image.decode_crop(s.bytes, box, ctx.out.image, {
      name = s.path, mean = image.IMAGENET_MEAN, std = image.IMAGENET_STD, flip = ctx.rng:bernoulli(0.5),
    })
    return { image = ctx.out.image, label = s.label }
  end,
  fields = { { "image", "float32", { 3, SIZE, SIZE } }, { "label", "int64" } },
  batch_size = 64,
  shuffle = true,
  workers = 2,
  on_error = "fail",
}
