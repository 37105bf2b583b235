-- tfrecord.lua: tf.train.Example records from TFRecord shards.
--
--   sluice run examples/tfrecord.lua
--   SLUICE_TFRECORD='data/train-*.tfrecord' sluice run examples/tfrecord.lua
--
-- By default it reads ../shared/data's example.tfrecord (4 records written by
-- TensorFlow, from pytorch/data's fixtures: x_float, ten floats; x_int, ten
-- int64s; x_byte, the bytes "test str"). Point SLUICE_TFRECORD at your own
-- shards (a glob) with the same features to read those instead.
--
-- index = true (the default) reads through each shard's sidecar index, built
-- and cached beside the shard on first use (`sluice index SHARD` builds it
-- ahead of time; a read-only folder keeps it in memory), so shuffle = true
-- shuffles records across all shards. Records are read ahead of map on each
-- worker's libuv loop; a corrupt record is dropped and reported at the end
-- (on_error = "skip") instead of stopping the run.
local sluice = require("sluice")

local shards = os.getenv("SLUICE_TFRECORD") or "../../shared/data/tfrecord/pytorch-data/example.tfrecord"
local N = 10  -- values per list

return sluice.pipeline {
  source = sluice.tfrecord { shards, index = true },
  fields = {
    { "x", "float32", { N } },
    { "x_int", "int32", { N } },
    { "tag_length", "int32" },
  },
  map = function(sample, ctx)
    local ex = sluice.example(sample)      -- decoded in C++; valid during this call
    ex:read("x_float", ctx.out.x)          -- float_list converted into the batch slot
    ex:read("x_int", ctx.out.x_int)        -- int64_list narrowed to int32
    return { x = ctx.out.x, x_int = ctx.out.x_int, tag_length = ex:bytes("x_byte").nbytes }
  end,
  batch_size = 2,
  shuffle = true,
  seed = 7,
  epochs = 3,
  on_error = "skip",
}
