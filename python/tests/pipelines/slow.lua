-- slow.lua: every sample takes about 0.2 s of busy work, so a consumer is
-- nearly always waiting for the next batch (the Ctrl-C test interrupts it there).
local sluice = require("sluice")

return sluice.pipeline {
  source = sluice.range(1000000),
  batch_size = 2,
  fields = { { "id", "int64" } },
  map = function(i, ctx)
    local t0 = os.clock()
    while os.clock() - t0 < 0.2 do end
    return { id = i }
  end,
  workers = 2,
  epochs = 0,
}
