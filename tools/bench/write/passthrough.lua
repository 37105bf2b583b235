-- Raw pass-through for the write benchmark: every file of train/ as it is,
-- one member KEY.jpg each. MAX_BYTES is set by bench.py to the largest file.
local sluice = require("sluice")

return sluice.pipeline {
  source = sluice.files{ dir = "train", match = "**/*.jpg" },
  batch_size = 1,  -- files up to MAX_BYTES: one per batch keeps the slots small (fewer fresh pages)
  fields = { { "jpg", "bytes", MAX_BYTES } },
  map = function(s, ctx) return { jpg = s.bytes } end,
}
