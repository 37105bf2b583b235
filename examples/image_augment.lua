-- image_augment.lua: ImageNet-style training augmentation on uint8 HWC images.
--
--   sluice run examples/image_augment.lua
--
-- The source makes a synthetic 256x320x3 uint8 image per sample (no dataset
-- needed); map applies a random resized crop (scale 8%..100%, aspect 3/4..4/3,
-- bilinear) to 224x224, a horizontal flip with probability 1/2, and per-channel
-- normalization, writing float32 CHW straight into the batch slot. Every
-- random choice comes from ctx.rng, so sample i gets the same crop and flip
-- whatever the worker count.
local sluice = require("sluice")

local SRC_H, SRC_W, C = 256, 320, 3
local OUT = 224
local MEAN = { 0.485, 0.456, 0.406 }
local STD = { 0.229, 0.224, 0.225 }
local CLASSES = 1000

local floor, min, max, sqrt, exp, log = math.floor, math.min, math.max, math.sqrt, math.exp, math.log

-- A deterministic test pattern: diagonal stripes whose period depends on the class.
local function synthetic_image(i, ctx)
  local img = ctx:tensor("uint8", { SRC_H, SRC_W, C })
  local p = img.data
  local period = 8 + i % 24
  for y = 0, SRC_H - 1 do
    local row = y * SRC_W * C
    for x = 0, SRC_W - 1 do
      local v = ((x + y) % period) * 255 / period
      local o = row + x * C
      p[o] = v
      p[o + 1] = (v + 85) % 256
      p[o + 2] = (v + 170) % 256
    end
  end
  return { image = img, label = i % CLASSES }
end

-- torchvision's RandomResizedCrop box: (top, left, height, width).
local function crop_box(rng, h, w)
  local area = h * w
  for _ = 1, 10 do
    local target = area * rng:uniform(0.08, 1.0)
    local ratio = exp(rng:uniform(log(3 / 4), log(4 / 3)))
    local cw = floor(sqrt(target * ratio) + 0.5)
    local ch = floor(sqrt(target / ratio) + 0.5)
    if cw > 0 and ch > 0 and cw <= w and ch <= h then
      return rng:random(0, h - ch), rng:random(0, w - cw), ch, cw
    end
  end
  local side = min(h, w)  -- fallback: the central square
  return floor((h - side) / 2), floor((w - side) / 2), side, side
end

local function augment(s, ctx)
  local rng = ctx.rng
  local top, left, ch, cw = crop_box(rng, SRC_H, SRC_W)
  local flip = rng:bernoulli(0.5)
  local src = s.image.data
  local out = ctx.out.image
  local dst = out.data
  local plane = OUT * OUT
  local sy, sx = ch / OUT, cw / OUT
  local scale0, scale1, scale2 = 1 / (255 * STD[1]), 1 / (255 * STD[2]), 1 / (255 * STD[3])
  local bias0, bias1, bias2 = -MEAN[1] / STD[1], -MEAN[2] / STD[2], -MEAN[3] / STD[3]
  for y = 0, OUT - 1 do
    local fy = top + (y + 0.5) * sy - 0.5
    fy = max(0, min(SRC_H - 1, fy))
    local y0 = floor(fy)
    local y1 = min(y0 + 1, SRC_H - 1)
    local wy = fy - y0
    local r0, r1 = y0 * SRC_W * C, y1 * SRC_W * C
    for x = 0, OUT - 1 do
      local fx = left + (x + 0.5) * sx - 0.5
      fx = max(0, min(SRC_W - 1, fx))
      local x0 = floor(fx)
      local x1 = min(x0 + 1, SRC_W - 1)
      local wx = fx - x0
      local a, b = r0 + x0 * C, r0 + x1 * C
      local c, d = r1 + x0 * C, r1 + x1 * C
      local w00, w01, w10, w11 = (1 - wy) * (1 - wx), (1 - wy) * wx, wy * (1 - wx), wy * wx
      local o = y * OUT + (flip and (OUT - 1 - x) or x)
      dst[o] = (w00 * src[a] + w01 * src[b] + w10 * src[c] + w11 * src[d]) * scale0 + bias0
      dst[plane + o] = (w00 * src[a + 1] + w01 * src[b + 1] + w10 * src[c + 1] + w11 * src[d + 1]) * scale1 + bias1
      dst[2 * plane + o] = (w00 * src[a + 2] + w01 * src[b + 2] + w10 * src[c + 2] + w11 * src[d + 2]) * scale2 + bias2
    end
  end
  return { image = out, label = s.label }
end

return sluice.pipeline {
  source = sluice.range(4096, synthetic_image),
  shuffle = true,
  seed = 2024,
  map = augment,
  fields = {
    { "image", "float32", { C, OUT, OUT } },
    { "label", "int64" },
  },
  batch_size = 32,
  drop_last = true,
  workers = 2,
  prefetch = 6,
}
