-- quickstart_sized.lua (tools/bench/python_bench.py): batches shaped like
-- examples/quickstart.lua's (image float32[64,3,32,32], label int64[64]) made as
-- one sample each, with only the labels and the first pixel of each image
-- written: the handoff of quickstart-sized batches, not quickstart's map.
local sluice = require("sluice")

return sluice.pipeline {
  source = sluice.range(1000000000),
  batch_size = 1,
  fields = { { "image", "float32", { 64, 3, 32, 32 } }, { "label", "int64", { 64 } } },
  map = function(i, ctx)
    local image, label = ctx.out.image, ctx.out.label
    for k = 0, 63 do
      label.data[k] = (64 * i + k) % 10
      image.data[k * 3072] = label.data[k] / 10
    end
    return { image = image, label = label }
  end,
  workers = 2,
  prefetch = 64,
  epochs = 1,
}
