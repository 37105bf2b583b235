-- sluice.rng: ctx.rng, the per-sample counter-based generator.
--
-- A generator is an FFI struct {key, counter}; the numbers it gives depend only
-- on the key (seed, domain, epoch, index) and how many were drawn before, never
-- on the worker or the schedule. Methods (math.random conventions):
--   rng:random()        uniform float in [0, 1)
--   rng:random(m)       integer in [1, m]
--   rng:random(m, n)    integer in [m, n]
--   rng:uniform(a, b)   float in [a, b)           (default [0, 1))
--   rng:normal(mu, s)   normal with mean mu, std s (default 0, 1)
--   rng:bernoulli(p)    true with probability p    (default 0.5)
--   rng:bits()          the next 64 random bits, as uint64_t cdata
local ffi = require("ffi")
local native = require("sluice.native")

local floor = math.floor
local api = native.api
local uniform, normal, next_bits, key_of = api.rng_uniform, api.rng_normal, api.rng_next, api.rng_key

local methods = {}

function methods.random(self, m, n)
  local u = uniform(self)
  if m == nil then return u end
  if n == nil then m, n = 1, m end
  if n < m then error("rng:random: empty interval [" .. m .. ", " .. n .. "]", 2) end
  return m + floor(u * (n - m + 1))
end

function methods.uniform(self, a, b)
  local u = uniform(self)
  if a == nil then return u end
  return a + (b - a) * u
end

function methods.normal(self, mu, sigma)
  return (mu or 0) + (sigma or 1) * normal(self)
end

function methods.bernoulli(self, p)
  return uniform(self) < (p or 0.5)
end

function methods.bits(self)
  return next_bits(self)
end

-- Restart the stream at key (seed, domain, epoch, index).
function methods.reset(self, seed, domain, epoch, index)
  self.key = key_of(seed, domain, epoch, index)
  self.counter = 0
end

local Rng = ffi.metatype("sluice_rng", { __index = methods })

local M = {}

-- A generator positioned at the start of stream (seed, domain, epoch, index).
function M.new(seed, domain, epoch, index)
  local rng = Rng()
  rng:reset(seed, domain, epoch, index)
  return rng
end

M.SAMPLE = 0  -- domain of the per-sample streams (source and map)
M.BATCH = 1   -- domain of the per-batch streams (map_batch)

return M
