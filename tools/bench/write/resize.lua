-- The conversion the write benchmark times: each photo of train/CLASS/ decoded
-- (at the smallest DCT scale that keeps its short side >= 256), resized to a
-- short side of 256 (bilinear, antialiased as PIL's), re-encoded as JPEG at
-- quality 90, and written with its class as WebDataset members KEY.jpg, KEY.cls.
local sluice = require("sluice")
local image = require("sluice.image")

local SHORT, QUALITY = 256, 90

return sluice.pipeline {
  source = sluice.folders("train"),
  batch_size = 1,  -- photos of 0.1 to 18 MP: one per batch keeps the workers evenly busy
  fields = { { "jpg", "bytes", 2097152 }, { "cls", "int64" } },  -- a 256-px JPEG is far smaller
  map = function(s, ctx)
    local info = image.info(s.bytes, s.path)
    local short = math.min(info.width, info.height)
    local w = math.max(1, math.floor(info.width * SHORT / short + 0.5))
    local h = math.max(1, math.floor(info.height * SHORT / short + 0.5))
    local img = image.decode(s.bytes, { name = s.path, scale = SHORT / short })
    local small = image.resize(img, ctx:tensor("uint8", { h, w, 3 }))
    return { jpg = image.encode_jpeg(small, { quality = QUALITY }), cls = s.label }
  end,
}
