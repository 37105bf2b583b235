-- chess.lua: a Lua version of a classic tf.data chess-evaluation pipeline.
--
--   sluice run examples/chess.lua
--
-- Each record is 1552 packed bits (194 bytes) and an int64 score:
--   bits    0 .. 1535  24 planes of 64 squares (plane-major, square = 8 * rank + file);
--                      planes 0..11 belong to the side to move, 12..23 to the opponent
--   bits 1536 .. 1545  10 flags (side to move, 4 castling rights, en-passant file present,
--                      check, ...), used as features as they are
--   bit  1546          m: the score is a mate distance rather than centipawns
--   bits 1547 .. 1551  zero
-- The pipeline unpacks the bits into an 8x8x24 float32 board with the opponent's
-- planes sign-flipped, the 10 flags as float32, and the training target
--   (1-m)*A*tanh(s/K) + m*sign(s)*(A + (1-A)/(B-1)*max(0, B-|s|))
-- which maps centipawns into (-A, A) and mates into [A, 1] (faster mates nearer 1).
--
-- No dataset is downloaded: the source synthesizes plausible records (about 26
-- pieces, 5% mates) from ctx.rng, so the decode work is the real pipeline's.
local sluice = require("sluice")
local bit = require("bit")

local A, K, B = 0.8, 400, 20
local RECORD_BYTES = 194
local PLANES = 24

local band, rshift, lshift, bor = bit.band, bit.rshift, bit.lshift, bit.bor
local tanh, abs, max = math.tanh, math.abs, math.max

local function set_bit(bytes, n)
  local byte = rshift(n, 3)
  bytes[byte] = bor(bytes[byte], lshift(1, band(n, 7)))
end

-- A synthetic record: packed bits in scratch memory and a score.
local function synthetic_record(i, ctx)
  local rng = ctx.rng
  local record = ctx:tensor("uint8", { RECORD_BYTES })
  local bytes = record.data
  for k = 0, RECORD_BYTES - 1 do bytes[k] = 0 end
  for _ = 1, 26 do
    set_bit(bytes, rng:random(0, PLANES - 1) * 64 + rng:random(0, 63))
  end
  for f = 0, 9 do
    if rng:bernoulli(0.3) then set_bit(bytes, 1536 + f) end
  end
  local mate = rng:bernoulli(0.05)
  local score
  if mate then
    set_bit(bytes, 1546)
    score = rng:random(1, 30) * (rng:bernoulli() and 1 or -1)
  else
    score = math.floor(rng:normal(0, 350) + 0.5)
  end
  return { bits = bytes, score = score }
end

local function decode(r, ctx)
  local bits = r.bits
  local board = ctx.out.board.data  -- float32[8][8][24], HWC
  for plane = 0, PLANES - 1 do
    local sign = plane < 12 and 1 or -1
    for square = 0, 63 do
      local n = plane * 64 + square
      local on = band(rshift(bits[rshift(n, 3)], band(n, 7)), 1)
      board[square * PLANES + plane] = sign * on
    end
  end
  local flags = ctx.out.flags.data
  for f = 0, 9 do
    local n = 1536 + f
    flags[f] = band(rshift(bits[rshift(n, 3)], band(n, 7)), 1)
  end
  local m = band(rshift(bits[rshift(1546, 3)], band(1546, 7)), 1)
  local s = r.score
  local sign = s > 0 and 1 or (s < 0 and -1 or 0)
  local target = (1 - m) * A * tanh(s / K) + m * sign * (A + (1 - A) / (B - 1) * max(0, B - abs(s)))
  return { board = ctx.out.board, flags = ctx.out.flags, target = target }
end

return sluice.pipeline {
  source = sluice.range(200000, synthetic_record),
  shuffle = true,
  seed = 1,
  map = decode,
  fields = {
    { "board", "float32", { 8, 8, PLANES } },
    { "flags", "float32", { 10 } },
    { "target", "float32" },
  },
  batch_size = 1024,
  workers = 2,
  prefetch = 6,
}
