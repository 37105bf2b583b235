-- normalize.lua: the benchmark's per-pixel transform, uint8 HWC 224x224x3 to
-- normalized float32 CHW, written into the batch slot. The input image is made
-- once, so only the transform is measured; script_bench.cpp runs the same loop
-- in C++ for the ratio.
local sluice = require("sluice")

local H, W, C = 224, 224, 3
local MEAN = { 0.485, 0.456, 0.406 }
local STD = { 0.229, 0.224, 0.225 }

local image = sluice.tensor("uint8", { H, W, C })
for k = 0, image.numel - 1 do image.data[k] = (k * 7 + 3) % 256 end

return sluice.pipeline {
  source = sluice.range(2048),
  fields = { { "image", "float32", { C, H, W } } },
  map = function(_, ctx)
    local out = ctx.out.image
    local plane = H * W
    -- One pointer per output plane; the source pointer steps one pixel (3
    -- bytes) at a time. Pointer steps and additions stay integer in LuaJIT's
    -- traces, where an index like 3 * p would be computed in floating point.
    local r, g, b = out.data, out.data + plane, out.data + 2 * plane
    local px = image.data
    local s0, s1, s2 = 1 / (255 * STD[1]), 1 / (255 * STD[2]), 1 / (255 * STD[3])
    local b0, b1, b2 = -MEAN[1] / STD[1], -MEAN[2] / STD[2], -MEAN[3] / STD[3]
    for p = 0, plane - 1 do
      r[p] = px[0] * s0 + b0
      g[p] = px[1] * s1 + b1
      b[p] = px[2] * s2 + b2
      px = px + 3
    end
    return { image = out }
  end,
  batch_size = 32,
  workers = 1,
}
