-- tokenize.lua: text files to token ids in the workers, with a SentencePiece
-- model (TOKENIZE_MODEL) over the files matching TOKENIZE_TEXTS. A sample is
-- one file: ids (int32, the first MAX ids, -1 after them) and count.
-- examples/python/pretrain_gpt.py --from text writes them to a token file,
-- EOS after each document, and trains from it with pretrain.lua.
local sluice = require("sluice")

local tok = sluice.sentencepiece(os.getenv("TOKENIZE_MODEL") or "m.model")
local MAX = 65536
return sluice.pipeline {
  source = sluice.files{ os.getenv("TOKENIZE_TEXTS") or "texts/*" },
  fields = { { "ids", "int32", { MAX } }, { "count", "int64" } },
  map = function(s, ctx)
    local ids, out = tok:encode(s.bytes), ctx.out.ids
    local n = ids.shape[1]
    if n > MAX then error(string.format("%s: %d tokens, more than %d", s.path, n, MAX)) end
    for i = 0, n - 1 do out.data[i] = ids.data[i] end
    for i = n, MAX - 1 do out.data[i] = -1 end
    return { ids = out, count = n }
  end,
  batch_size = 4, workers = 2,
}
