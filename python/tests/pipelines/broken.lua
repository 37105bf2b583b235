-- broken.lua: like counting.lua, but the map fails on samples 13 and 57.
local sluice = require("sluice")

return sluice.pipeline {
  source = sluice.range(100),
  batch_size = 8,
  fields = { { "id", "int64" } },
  map = function(i, ctx)
    if i == 13 or i == 57 then
      error("sample " .. i .. " is broken")
    end
    return { id = i }
  end,
  workers = 2,
  epochs = 1,
}
