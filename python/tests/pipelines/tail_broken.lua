-- tail_broken.lua: 100 samples in batches of 8, in order, three epochs; the map
-- fails on samples 96..99, so every epoch's last batch (12) is all skipped
-- with on_error = "skip" and the epoch ends with nothing delivered for it.
local sluice = require("sluice")

return sluice.pipeline {
  source = sluice.range(100),
  batch_size = 8,
  fields = { { "id", "int64" } },
  map = function(i, ctx)
    if i >= 96 then
      error("sample " .. i .. " is broken")
    end
    return { id = i }
  end,
  on_error = "skip",
  workers = 2,
  epochs = 3,
}
