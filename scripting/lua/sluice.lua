-- sluice: the module a pipeline.lua requires to describe its input pipeline.
--
--   local sluice = require("sluice")
--   return sluice.pipeline {
--     source = sluice.range(50000),              -- or sluice.files{...}
--     map = function(i, ctx)                     -- one sample, written in place
--       local x = ctx.out.x                      -- float32[16] view into the batch slot
--       for k = 0, 15 do x.data[k] = ctx.rng:normal() end
--       return { x = x, label = i % 10 }
--     end,
--     fields = { { "x", "float32", { 16 } }, { "label", "int64" } },
--     batch_size = 64, shuffle = true, seed = 7,
--   }
--
-- The script runs once in the launching process (to read the pipeline, infer
-- the fields from sample 0 if they are not declared, and make sample 0 once as
-- a check) and once in every worker process, each with its own LuaJIT state, so
-- it must describe the same pipeline every time.
--
-- What map(sample, ctx) receives in ctx (valid during the call only):
--   ctx.index      the sample's dataset index          ctx.epoch   the epoch
--   ctx.batch      the batch index within the epoch    ctx.position  row in the batch
--   ctx.worker     the worker's id                     ctx.size    samples in the batch
--   ctx.rng        random numbers keyed by (seed, epoch, index): see sluice.rng
--   ctx.out.NAME   a tensor over this sample's row of field NAME in the batch slot
--                  (declared fields only); write it and return it: no copy
--   ctx:tensor(dtype, shape)  scratch memory until the sample is written
-- map returns {NAME = value} for every field: a tensor of the field's dtype and
-- shape (copied unless it is ctx.out.NAME), or a number/boolean for a scalar
-- field. map_batch(batch, ctx) gets batch.NAME, a tensor over the whole
-- [size, shape...] field, to change in place (ctx.rng is keyed by the batch).
--
-- Fast loops: tensors' .data are FFI pointers, and LuaJIT compiles loops over
-- them to machine code. Keep index arithmetic to additions or pointer steps
-- (p + p + p, or px = px + 3): LuaJIT computes 3 * p in floating point.
local tensor = require("sluice.tensor")
local native = require("sluice.native")

local M = {}

-- The pipeline.lua being loaded: its directory ("." until one is) and its
-- name as given to the loader.
M.script_dir = "."
M.script_name = nil

-- Raise a configuration error located at the pipeline.lua line that called
-- into this module (`level` counts from the caller of fail).
local ConfigError = {}
M.ConfigError = ConfigError
local function fail(level, fmt, ...)
  local info = debug.getinfo(level + 2, "Sl")
  local where
  if info and info.currentline > 0 and not info.short_src:find("^%[sluice") then
    where = info.short_src .. ":" .. info.currentline .. ": "
  else  -- `return sluice.pipeline{...}` is a tail call: the line is gone
    where = M.script_name and (M.script_name .. ": ") or ""
  end
  error(setmetatable({ message = where .. string.format(fmt, ...) }, ConfigError), 0)
end

local function is_integer(x)
  return type(x) == "number" and x == math.floor(x) and x > -2^53 and x < 2^53
end

-- Paths in a pipeline are relative to the directory of pipeline.lua.
function M.path(p)
  if type(p) ~= "string" then fail(1, "sluice.path: expected a string, got a %s", type(p)) end
  if p:sub(1, 1) == "/" then return p end
  return M.script_dir .. "/" .. p
end

-- Source: the dataset indices [0, n). A sample is make(i, ctx), or i itself
-- when make is omitted.
function M.range(n, make)
  if not is_integer(n) or n <= 0 then fail(1, "sluice.range: size must be a positive integer, got %s", tostring(n)) end
  if make ~= nil and type(make) ~= "function" then
    fail(1, "sluice.range: the second argument must be a function(i, ctx), got a %s", type(make))
  end
  return { kind = "range", size = n, make = make }
end

-- Source: a list of files, one sample each. A sample is
--   { path = "...", bytes = <uint8 tensor of the whole file>, index = i }
-- (bytes in scratch memory, valid during that sample's map). Either an array of
-- paths, or { dir = "data", match = "%.bin$" } for the matching files of a
-- directory in name order (match is a Lua pattern; default: every file).
function M.files(spec)
  if type(spec) ~= "table" then fail(1, "sluice.files: expected an array of paths or {dir = ..., match = ...}") end
  local paths = {}
  if spec.dir ~= nil then
    local dir = M.path(spec.dir)
    local ok, names = pcall(native.list_dir, dir)
    if not ok then fail(1, "sluice.files: %s", tostring(names)) end
    local match = spec.match
    for _, name in ipairs(names) do
      if match == nil or name:find(match) then paths[#paths + 1] = dir .. "/" .. name end
    end
    if #paths == 0 then fail(1, "sluice.files: no file in %s matches %s", dir, tostring(match or "*")) end
  else
    for i = 1, #spec do
      if type(spec[i]) ~= "string" then fail(1, "sluice.files: entry %d is a %s, not a path", i, type(spec[i])) end
      paths[i] = M.path(spec[i])
    end
    if #paths == 0 then fail(1, "sluice.files: the list of files is empty") end
  end
  return { kind = "files", size = #paths, paths = paths }
end

-- Tensors (see sluice.tensor): sluice.tensor(dtype, shape) allocates outside
-- the Lua heap; sluice.view(dtype, shape, pointer, owner) wraps memory.
M.tensor = tensor.new
M.view = tensor.view
M.is_tensor = tensor.is_tensor
M.dtypes = tensor.DTYPE_NAMES

-- float16 / bfloat16 bit conversions, for loops that write such tensors' data.
M.half = {
  from_float = function(x) return native.api.f32_to_f16(x) end,
  to_float = function(h) return native.api.f16_to_f32(h) end,
  bf16_from_float = function(x) return native.api.f32_to_bf16(x) end,
  bf16_to_float = function(b) return native.api.bf16_to_f32(b) end,
}

local OPTIONS = {
  source = true, map = true, map_batch = true, batch_size = true, drop_last = true,
  shuffle = true, seed = true, fields = true, workers = true, prefetch = true,
  ordered = true, epochs = true, device = true,
}
local OPTION_LIST = "source, map, map_batch, batch_size, drop_last, shuffle, seed, fields, "
  .. "workers, prefetch, ordered, epochs, device"

local Pipeline = {}
M.Pipeline = Pipeline

-- Fields, declared as an array of {name, dtype, shape} (or {name=, dtype=,
-- shape=}), or as a table name -> {dtype, shape} / name -> dtype, which is
-- taken in name order. Returns an array of {name, dtype (record), shape}.
local function normalize_fields(fields)
  if type(fields) ~= "table" then fail(2, "fields must be a table, got a %s", type(fields)) end
  local entries = {}
  if #fields > 0 then
    for i, f in ipairs(fields) do
      if type(f) ~= "table" then fail(2, "fields[%d] must be {name, dtype, shape}, got a %s", i, type(f)) end
      entries[i] = { name = f.name or f[1], dtype = f.dtype or f[2], shape = f.shape or f[3] }
    end
  else
    local names = {}
    for name in pairs(fields) do names[#names + 1] = name end
    table.sort(names, function(a, b) return tostring(a) < tostring(b) end)
    for i, name in ipairs(names) do
      local f = fields[name]
      if type(f) == "string" then f = { f } end
      if type(f) ~= "table" then fail(2, "fields.%s must be {dtype, shape} or a dtype name", tostring(name)) end
      entries[i] = { name = name, dtype = f.dtype or f[1], shape = f.shape or f[2] }
    end
  end
  if #entries == 0 then fail(2, "fields is empty; declare at least one field or leave fields out to infer them") end
  local seen = {}
  for i, e in ipairs(entries) do
    if type(e.name) ~= "string" or e.name == "" then fail(2, "field %d has no name", i) end
    if seen[e.name] then fail(2, "field '%s' is declared twice", e.name) end
    seen[e.name] = true
    local dt = tensor.dtype(e.dtype)
    if not dt then
      fail(2, "field '%s': unknown dtype %s (one of %s)", e.name, tostring(e.dtype), tensor.DTYPE_NAMES)
    end
    local shape, why = tensor.check_shape(e.shape)
    if not shape then fail(2, "field '%s': %s", e.name, why) end
    entries[i] = { name = e.name, dtype = dt, shape = shape }
  end
  return entries
end

-- The pipeline: what pipeline.lua returns. Every option but source has a default:
--   source      sluice.range(n [, make]) or sluice.files{...}           (required)
--   map         function(sample, ctx) -> {field = value, ...}; default: the sample
--   map_batch   function(batch, ctx), in place on the whole batch       (optional)
--   fields      declared fields; default: inferred from sample 0
--   batch_size  1          drop_last  false     shuffle  false     seed  0
--   epochs      1 (0 = until stopped)           workers  2
--   prefetch    batch slots in flight; 0 = runtime default (2 * workers + 2)
--   ordered     true: deliver in plan order; false: as batches complete
--   device      "cpu" | "auto" (cpu for now) | "cuda" (not supported yet)
function M.pipeline(spec)
  if type(spec) ~= "table" then fail(1, "sluice.pipeline expects a table of options, got a %s", type(spec)) end
  for key in pairs(spec) do
    if not OPTIONS[key] then
      fail(1, "sluice.pipeline: unknown option '%s' (options: %s)", tostring(key), OPTION_LIST)
    end
  end
  local p = setmetatable({}, Pipeline)
  local source = spec.source
  if type(source) ~= "table" or (source.kind ~= "range" and source.kind ~= "files") then
    fail(1, "sluice.pipeline: source must be sluice.range(n, fn) or sluice.files{...}")
  end
  p.source = source
  local function option(key, check, default, what)
    local v = spec[key]
    if v == nil then return default end
    if not check(v) then fail(2, "sluice.pipeline: %s must be %s, got %s", key, what, tostring(v)) end
    return v
  end
  local function boolean(v) return type(v) == "boolean" end
  local function fn(v) return type(v) == "function" end
  local function count(v) return is_integer(v) and v >= 0 and v < 2^32 end
  local function positive(v) return count(v) and v > 0 end
  p.map = option("map", fn, nil, "a function(sample, ctx)")
  p.map_batch = option("map_batch", fn, nil, "a function(batch, ctx)")
  p.batch_size = option("batch_size", positive, 1, "a positive integer")
  p.drop_last = option("drop_last", boolean, false, "true or false")
  p.shuffle = option("shuffle", boolean, false, "true or false")
  p.seed = option("seed", function(v) return is_integer(v) and v >= 0 end, 0, "an integer in [0, 2^53)")
  p.epochs = option("epochs", count, 1, "a non-negative integer")
  p.workers = option("workers", positive, 2, "a positive integer")
  p.prefetch = option("prefetch", count, 0, "a non-negative integer")
  p.ordered = option("ordered", boolean, true, "true or false")
  p.device = option("device", function(v) return v == "cpu" or v == "auto" or v == "cuda" end,
    "cpu", '"cpu", "auto" or "cuda"')
  if spec.fields ~= nil then p.fields = normalize_fields(spec.fields) end
  local info = p.map and debug.getinfo(p.map, "S")
  p.map_where = info and (info.short_src .. ":" .. info.linedefined) or nil
  info = p.map_batch and debug.getinfo(p.map_batch, "S")
  p.map_batch_where = info and (info.short_src .. ":" .. info.linedefined) or nil
  return p
end

return M
