-- pretrain.lua: language-model pretraining batches from a token file.
--
-- The corpus is a flat file of uint16 token ids with EOS = 0 between
-- documents (PRETRAIN_CORPUS, default corpus.bin next to this file); rows of
-- seq_len tokens are packed from it (concat: no padding), and a batch is what
-- a training step uses directly: tokens, targets, segment_ids, positions,
-- loss_mask. examples/python/pretrain_gpt.py trains a tiny GPT on it.
local sluice = require("sluice")

local seq_len = tonumber(os.getenv("PRETRAIN_SEQ_LEN") or "64")
return sluice.pipeline {
  source = sluice.tokens{ os.getenv("PRETRAIN_CORPUS") or "corpus.bin", dtype = "uint16", eos = 0 },
  pack = { seq_len = seq_len, mode = os.getenv("PRETRAIN_PACK") or "concat", window = 64 },
  batch_size = 16, shuffle = true, seed = 1, workers = 2,
}
