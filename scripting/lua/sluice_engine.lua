-- sluice.engine: runs a pipeline.lua for the C++ host. Not for pipelines.
--
-- In the launching process:
--   load(path, dir)                          run pipeline.lua, keep its pipeline
--   source_spec() -> plain table describing a native source (sluice.files,
--                    .folders, .tfrecord, .tar, .jsonl, .npy), or nil for sluice.range;
--                    the host opens it and learns its size
--   describe(epochs, workers, prefetch, seed, size, host, on_error, parquet) -> plain
--                    table for sluice::Options (the first four and on_error:
--                    overrides or nil; size: a native source's sample count;
--                    host: a FeedHost* for feed_take; parquet: a Parquet
--                    source's schema, or nil); it also makes sample 0
--                    once (the trial), to infer the fields and to fail early
--                    and clearly. With on_error = "skip" a failing sample 0
--                    does not stop the trial: the next samples are tried (at
--                    most TRIAL_SAMPLES), and the workers skip sample 0
-- In each worker process, on its own fresh Lua state:
--   load(path, dir); start_worker(spec); then fill(view) per batch, where
--   view.host is the worker's FeedHost (feed_begin / feed_take per row)
-- Everywhere: message_handler(e), the lua_pcall handler that turns any error into
-- the one message the user sees.
--
-- Contracts with the host: every function here is called under lua_pcall with
-- message_handler; tables returned to the host are plain (no metatables).
local ffi = require("ffi")
local native = require("sluice.native")
local tensor = require("sluice.tensor")
local rngs = require("sluice.rng")
local sluice = require("sluice")

local api = native.api
local floor, format, huge = math.floor, string.format, math.huge
local is_tensor = tensor.is_tensor
local char_ptr = ffi.typeof("char*")

local M = {}

-- An error sluice raises itself: its message is complete, no traceback added.
local SluiceError = {}
local function fail(fmt, ...)
  error(setmetatable({ message = format(fmt, ...) }, SluiceError), 0)
end

-- What is running, for message_handler: `stage` names the user function
-- ("map (pipeline.lua:12)"); `index` is the dataset index of the sample being
-- made, or nil in map_batch, where `batch` is set.
local current = { stage = nil, index = nil, batch = nil, epoch = nil, path = nil, native = false }

-- The traceback of user code only, from stack level `level` up: frames inside
-- sluice's own chunks and C frames say nothing to the user. A user function
-- called by sluice is named by its stage (LuaJIT would name it after sluice's
-- local variable).
local function is_user(info)
  return info ~= nil and info.what ~= "C" and info.short_src:sub(1, 8) ~= "[sluice."
end

local function user_traceback(level)
  local lines = {}
  level = level + 1
  local info = debug.getinfo(level, "Sln")
  while info do
    local caller = debug.getinfo(level + 1, "Sln")
    if is_user(info) then
      local name
      if info.what == "main" then
        name = "main chunk"
      elseif is_user(caller) and info.name then
        name = "function '" .. info.name .. "'"
      else
        name = "function <" .. info.short_src .. ":" .. info.linedefined .. ">"
      end
      lines[#lines + 1] = "\t" .. info.short_src .. ":" .. info.currentline .. ": in " .. name
    end
    level, info = level + 1, caller
  end
  if #lines == 0 then return "" end
  return "\nstack traceback:\n" .. table.concat(lines, "\n")
end

function M.message_handler(e)
  local mt = type(e) == "table" and getmetatable(e)
  if mt == SluiceError or mt == sluice.ConfigError then return e.message end
  local message = tostring(e) .. user_traceback(2)
  local stage = current.stage
  if stage == nil then return message end
  if current.index ~= nil then
    if current.path ~= nil then  -- the sample's file, for a source that reads files
      return format("%s failed on sample %d (epoch %d, file %s): %s", stage, current.index, current.epoch,
        current.path, message)
    end
    return format("%s failed on sample %d (epoch %d): %s", stage, current.index, current.epoch, message)
  elseif current.batch ~= nil then
    return format("%s failed on batch %d (epoch %d): %s", stage, current.batch, current.epoch, message)
  end
  return format("%s failed: %s", stage, message)
end

local function where(fn)
  local info = debug.getinfo(fn, "S")
  return info.short_src .. ":" .. info.linedefined
end

local P          -- the pipeline returned by pipeline.lua
local path_name  -- pipeline.lua as the user named it

-- Runs pipeline.lua: `text` is its contents as the launching process read
-- them (a worker's, so that every worker of the run, those that replace a
-- crashed one included, runs the script the run began with, whatever
-- happens to the file since); nil reads the file. Returns the text run.
function M.load(path, dir, text)
  path_name = path
  sluice.script_dir, sluice.script_name = dir, path
  package.path = dir .. "/?.lua;" .. dir .. "/?/init.lua;" .. package.path
  if text == nil then
    local file, err = io.open(path, "rb")
    if not file then fail("cannot open pipeline %s", err) end
    text, err = file:read("*a")
    file:close()
    if not text then fail("cannot read pipeline %s: %s", path, err) end
  end
  -- As loadfile: a first line that begins with # (#!/usr/bin/env ...) is not Lua.
  local chunk, err = load(text:sub(1, 1) == "#" and ("--" .. text) or text, "@" .. path)
  if not chunk then fail("syntax error: %s", err) end
  current.stage = "running " .. path
  local p = chunk()
  current.stage = nil
  if getmetatable(p) ~= sluice.Pipeline then
    fail("%s must return sluice.pipeline{...}; it returned %s", path,
      p == nil and "nothing" or ("a " .. type(p)))
  end
  P = p
  return text
end

-- The machinery that makes batches, set up by prepare().
local fields        -- array of {name, dtype, shape, numel, nbytes}
local field_named   -- name -> field
local field_list    -- "image, label", for messages
local seed
local arena = tensor.arena()
local rng = rngs.new(0, 0, 0, 0)
local ctx = { rng = rng }
local out = {}      -- name -> tensor view of the current sample's row in the slot
local bases = {}    -- bases[k]: char* to field k of the batch being filled
local source_stage, map_stage, batch_stage
local host          -- the FeedHost of the batch being made (a void* for the FFI)
local record = ffi.new("sluice_record")
local DTYPES = tensor.DTYPES

function ctx.tensor(_, dtype, shape)
  return arena:tensor(dtype, shape)
end

local function same_shape(a, b)
  if #a ~= #b then return false end
  for i = 1, #a do
    if a[i] ~= b[i] then return false end
  end
  return true
end

local function who()
  return P.map and map_stage or source_stage
end

-- The sample being stored, for a field's error: its dataset index, and
-- where a native source read it from (the record taken last is this
-- sample's: "sample 7 (train.parquet row 7)"), a user's file and row.
local function this_sample()
  if current.native and record.path_len > 0 then
    return format("%d (%s %s %d)", current.index, ffi.string(record.path, record.path_len),
      P.source.kind == "parquet" and "row" or "record", tonumber(record.record))
  end
  return tostring(current.index)
end

local function store_scalar(f, v, dst)
  local dt = f.dtype
  local p = ffi.cast(dt.pointer, dst)
  local kind = dt.kind
  if kind == "bool" then
    if type(v) == "boolean" then p[0] = v
    elseif v == 0 or v == 1 then p[0] = (v == 1)
    else fail("%s: field '%s' of sample %s is bool; got %s", who(), f.name, this_sample(), tostring(v)) end
    return
  end
  if type(v) == "boolean" then
    fail("%s: field '%s' of sample %s is %s; got a boolean", who(), f.name, this_sample(), dt.name)
  end
  if kind == "int" then
    if type(v) == "number" and (v ~= floor(v) or v < dt.min or v >= dt.limit) then
      fail("%s: field '%s' of sample %s is %s; %s is not a value of that type",
        who(), f.name, this_sample(), dt.name, tostring(v))
    end
    p[0] = v
    return
  end
  -- A finite number past the float type's range would be stored as inf:
  -- refused as an integer out of range is (NaN and inf pass as given).
  local n = tonumber(v)
  local stored
  if kind == "f16" then
    p[0] = api.f32_to_f16(n)
    stored = api.f16_to_f32(p[0])
  elseif kind == "bf16" then
    p[0] = api.f32_to_bf16(n)
    stored = api.bf16_to_f32(p[0])
  else
    p[0] = v
    stored = tonumber(p[0])
  end
  if (stored == huge or stored == -huge) and n == n and n ~= huge and n ~= -huge then
    fail("%s: field '%s' of sample %s is %s; %s is past its range (it would be stored as %s)",
      who(), f.name, this_sample(), dt.name, tostring(v), stored > 0 and "inf" or "-inf")
  end
end

local function is_scalar(v)
  local t = type(v)
  return t == "number" or t == "boolean"
    or (t == "cdata" and (ffi.istype("int64_t", v) or ffi.istype("uint64_t", v)))
end

-- A bytes field (sluice/options.h, FieldSpec::max_bytes): the length as a
-- uint64, then the bytes of a Lua string or a uint8 tensor.
local length_box = ffi.new("uint64_t[1]")
local function store_bytes(f, v, dst)
  local n
  if type(v) == "string" then
    n = #v
  elseif is_tensor(v) and v.dtype == "uint8" then
    n = v.nbytes
    if n == 0 and v.data == nil and P.source.kind == "parquet" then  -- a null string (take_record), not an empty one
      fail('%s: field \'%s\' of sample %s is null, which a bytes field cannot hold; give it a value in the map '
        .. '(s.fields.NAME.data == nil for a null), or on_error = "skip" drops such rows', who(), f.name, this_sample())
    end
  else
    fail("%s: field '%s' of sample %s is bytes: a Lua string or a uint8 tensor; got %s", who(), f.name,
      this_sample(), is_tensor(v) and ("a " .. v.dtype .. " tensor") or ("a Lua " .. type(v)))
  end
  if n > f.bytes then
    fail("%s: field '%s' of sample %s has %d bytes, more than the %d its declaration allows; declare more "
      .. "({ \"%s\", \"bytes\", N })", who(), f.name, this_sample(), n, f.bytes, f.name)
  end
  length_box[0] = n
  ffi.copy(dst, length_box, 8)
  if n == 0 then return end
  if type(v) == "string" then
    ffi.copy(dst + 8, v, n)
  else
    api.copy_to_batch(dst + 8, v.data, n)
  end
end

-- Put value v of field f of one sample at dst (a char* into the slot).
local function store(f, v, dst)
  if f.bytes then return store_bytes(f, v, dst) end
  if is_tensor(v) then
    if v.dtype ~= f.dtype.name or not same_shape(v.shape, f.shape) then
      fail("%s: field '%s' of sample %s must be %s, got %s", who(), f.name, this_sample(),
        tensor.describe(f.dtype.name, f.shape), tensor.describe(v.dtype, v.shape))
    end
    local src = ffi.cast(char_ptr, v.data)
    if src ~= dst then api.copy_to_batch(dst, src, f.nbytes) end  -- equal: written in place
  elseif is_scalar(v) then
    if f.numel ~= 1 then
      fail("%s: field '%s' of sample %s must be %s, got the scalar %s", who(), f.name, this_sample(),
        tensor.describe(f.dtype.name, f.shape), tostring(v))
    end
    store_scalar(f, v, dst)
  else
    fail("%s: field '%s' of sample %s is a %s; a field value is a tensor (ctx.out.%s, ctx:tensor, "
      .. "sluice.tensor) or a number", who(), f.name, this_sample(),
      type(v) == "cdata" and tostring(ffi.typeof(v)) or ("Lua " .. type(v)), f.name)
  end
end

-- Check and write what map returned for the sample in row `row` of the batch.
local function write_result(result, row)
  if result == nil then
    fail("%s returned nothing for sample %d; it must return a table of fields (%s)",
      who(), current.index, field_list)
  end
  if type(result) ~= "table" or is_tensor(result) then
    fail("%s returned a %s for sample %d; it must return a table {field = value} with fields (%s)",
      who(), is_tensor(result) and "tensor" or type(result), current.index, field_list)
  end
  for k = 1, #fields do
    local f = fields[k]
    local v = result[f.name]
    if v ~= nil then
      store(f, v, bases[k] + row * f.nbytes)
    elseif not P.map_batch then
      if P.map then
        fail("%s returned no field '%s' for sample %d (fields: %s)", who(), f.name, current.index, field_list)
      end
      -- Without a map the source's own names are the fields: say which it has.
      local names = {}
      for key in pairs(result) do names[#names + 1] = tostring(key) end
      table.sort(names)
      fail("%s gives no field '%s' for sample %s: it gives %s; declare fields by those names, or add a map "
        .. "that makes '%s'", who(), f.name, this_sample(), #names > 0 and table.concat(names, ", ") or "none",
        f.name)
    end
  end
  for key in pairs(result) do
    if not field_named[key] then
      fail("%s returned '%s' for sample %d, which is not a field (fields: %s)",
        who(), tostring(key), current.index, field_list)
    end
  end
end

-- A Parquet row without a map whose column `name` has no value (a null, or
-- an empty list: the reader gives both as shape {0}; a null string as an
-- empty view with no data): an error naming the file, the row and the
-- column when its field holds values, rather than the shape mismatch the
-- store would report, or an empty string where the table has none.
-- `what`: what else the empty value may be (a list field's " or an empty
-- list").
local function parquet_null(name, what)
  local want = field_named[name]
  if want == nil or (want.numel == 0 and not want.bytes) then return end
  what = what or (#want.shape > 0 and " or an empty list" or "")
  fail('%s row %d: column \'%s\' is null%s, which field \'%s\' (%s) cannot hold; on_error = "skip" drops '
    .. "such rows, or a map can give the field a value", ffi.string(record.path, record.path_len),
    tonumber(record.record), name, what, name,
    want.bytes and format("bytes, at most %d", want.bytes) or tensor.describe(want.dtype.name, want.shape))
end

-- The record of a native source for dataset index `index`, as a sample table
-- of views into the reader's memory (see sluice.lua, Sources).
local function take_record(index, row)
  if api.feed_take(host, row, index, record) ~= 0 then
    fail("%s", ffi.string(record.error, record.error_len))
  end
  current.native = true  -- `record` is this sample's (this_sample)
  local fields = {}
  local direct = P.source.kind == "parquet" and P.map == nil  -- the columns are the fields
  for k = 0, record.field_count - 1 do
    local f = record.fields[k]
    local name = ffi.string(f.name, f.name_len)
    if f.dtype < 0 then
      if f.data == nil and direct then parquet_null(name, "") end  -- an empty string has data
      fields[name] = tensor.view("uint8", { tonumber(f.size) }, f.data)
    else
      local shape = {}
      for d = 1, f.ndim do shape[d] = tonumber(f.shape[d - 1]) end
      if shape[1] == 0 and direct then parquet_null(name) end
      fields[name] = tensor.view(DTYPES[f.dtype + 1].name, shape, f.data)
    end
  end
  if (P.source.kind == "npy" or P.source.kind == "parquet" or P.pack or P.source.spec.window) and P.map == nil then
    return fields
  end
  return {
    index = index, fields = fields, bytes = P.source.kind == "jsonl" and fields[P.source.spec.field] or fields.data,
    path = ffi.string(record.path, record.path_len),
    key = record.key_len > 0 and ffi.string(record.key, record.key_len) or nil,
    label = tonumber(record.label), record = tonumber(record.record), offset = tonumber(record.offset),
  }
end

-- The sample with dataset index `index` (row `row` of its batch), before map.
local function make_sample(index, row)
  local source = P.source
  if source.native then return take_record(index, row) end
  api.feed_begin(host, row)
  if source.make == nil then return index end
  current.stage = source_stage
  return source.make(index, ctx)
end

-- Make sample `index` of `epoch` and return what map returned for it.
local function run_map(index, epoch, row)
  current.index, current.epoch, current.batch, current.path, current.native = index, epoch, nil, nil, false
  ctx.index, ctx.position = index, row
  rng:reset(seed, rngs.SAMPLE, epoch, index)
  arena:reset()
  local sample = make_sample(index, row)
  if type(sample) == "table" and type(sample.path) == "string" and sample.path ~= "" then
    current.path = sample.path
  end
  local map = P.map
  if map == nil then return sample end
  current.stage = map_stage
  return map(sample, ctx)
end

-- The most bytes one sample of one field may take: more is a mistake in the
-- shape (and would overflow the sizes of batches and slots).
local MAX_FIELD_BYTES = 2 ^ 40

local function set_fields(list)
  fields, field_named = {}, {}
  local names = {}
  for k, f in ipairs(list) do
    local numel = tensor.numel(f.shape)
    local nbytes = numel * f.dtype.size
    if not (nbytes <= MAX_FIELD_BYTES) then  -- also catches inf
      fail("%s: field '%s' is %s: %s bytes per sample, more than the 2^40 bytes (1 TiB) a field may "
        .. "take; check its shape", path_name, f.name, tensor.describe(f.dtype.name, f.shape),
        nbytes < 2 ^ 63 and format("%.0f", nbytes) or format("%.3g", nbytes))
    end
    local entry = { name = f.name, dtype = f.dtype, shape = f.shape, numel = numel, nbytes = nbytes,
      bytes = f.bytes }
    fields[k], field_named[f.name], names[k] = entry, entry, f.name
  end
  field_list = #names > 0 and table.concat(names, ", ") or "name = value, ..."
end

-- Packed token rows without a map go straight into the slot (one write per
-- byte, no views): packed_slots[j] is the field index of the j-th packed field
-- (tokens, targets, segment_ids, positions, loss_mask), or nil when the
-- fields are not exactly those.
local PACKED = { { "tokens", "int64" }, { "targets", "int64" }, { "segment_ids", "int32" },
  { "positions", "int32" }, { "loss_mask", "float32" } }
local packed_slots
local packed_dst = ffi.new("void*[5]")

local function find_packed_slots()
  packed_slots = nil
  if not P.pack or P.map or #fields ~= #PACKED then return end
  local slots = {}
  for j, want in ipairs(PACKED) do
    local f = field_named[want[1]]
    if f == nil or f.dtype.name ~= want[2] or f.numel ~= P.pack.seq_len then return end
    for k, g in ipairs(fields) do if g == f then slots[j] = k end end
  end
  packed_slots = slots
end

local function fill_packed(view, n)
  local epoch = tonumber(view.epoch)
  for row = 0, n - 1 do
    for j = 1, 5 do
      local k = packed_slots[j]
      packed_dst[j - 1] = bases[k] + row * fields[k].nbytes
    end
    local index = view.samples[row]
    if api.feed_fill_packed(host, row, index, packed_dst, record) ~= 0 then
      current.index, current.epoch, current.stage = tonumber(index), epoch, source_stage
      fail("%s", ffi.string(record.error, record.error_len))
    end
  end
end

-- Parquet rows without a map go straight into the slot when the fields are
-- the columns (RecordFeed::fill_parquet; a bytes field takes a byte column):
-- runs of consecutive rows column by column, a shuffled batch's rows
-- gathered row group by row group, strings row by row; rows it leaves (a
-- null, a string too long, a read error) take the path of every sample,
-- which reports them. parquet_slots is nil when the fields cannot be
-- written that way.
local parquet_slots, parquet_done, parquet_done_size

local function find_parquet_slots()
  parquet_slots = nil
  if P.source.kind ~= "parquet" or P.map or #fields == 0 then return end
  local slots = ffi.new("sluice_parquet_slot[?]", #fields)
  for k, f in ipairs(fields) do
    if #f.shape > 1 and not f.bytes then return end
    local slot = slots[k - 1]
    slot.name, slot.stride, slot.ndim = f.name, f.nbytes, #f.shape  -- f.name is kept alive by fields
    slot.dtype = f.bytes and -1 or f.dtype.code  -- -1: a bytes field (length, then bytes)
  end
  parquet_slots, parquet_done, parquet_done_size = slots, nil, 0
end

-- Writes the batch's rows it can; true for each row j with parquet_done[j] ~= 0.
local function fill_parquet(view, n)
  for k = 1, #fields do parquet_slots[k - 1].dst = bases[k] end
  if parquet_done_size < n then parquet_done, parquet_done_size = ffi.new("uint8_t[?]", n), n end
  local written = api.feed_fill_parquet(host, view.samples, n, parquet_slots, #fields, parquet_done)
  if written < 0 then parquet_slots = nil return 0 end
  return written
end

local function prepare(list, the_seed)
  seed = the_seed
  source_stage = P.source.make and ("source (" .. where(P.source.make) .. ")") or "source"
  map_stage = P.map and ("map (" .. where(P.map) .. ")") or nil
  batch_stage = P.map_batch and ("map_batch (" .. where(P.map_batch) .. ")") or nil
  set_fields(list)
  find_packed_slots()
  find_parquet_slots()
end

-- Fill one batch: view is a const sluice_fill_view* (lightuserdata or cdata).
function M.fill(view)
  view = ffi.cast("const sluice_fill_view*", view)
  host = view.host
  local epoch, n = tonumber(view.epoch), view.size
  ctx.epoch, ctx.batch, ctx.worker, ctx.size = epoch, tonumber(view.batch), view.worker, n
  for k = 1, #fields do bases[k] = ffi.cast(char_ptr, view.data[k - 1]) end
  if packed_slots then fill_packed(view, n) end
  local written = parquet_slots and fill_parquet(view, n) or 0
  for row = 0, (packed_slots or written == n) and -1 or n - 1 do
    if written == 0 or parquet_done[row] == 0 then
      for k = 1, #fields do
        local f = fields[k]
        out[f.name].data = ffi.cast(f.dtype.pointer, bases[k] + row * f.nbytes)
      end
      local result = run_map(tonumber(view.samples[row]), epoch, row)
      current.stage = nil
      write_result(result, row)
    end
  end
  current.index = nil
  if P.map_batch then
    local batch = {}
    for k = 1, #fields do
      local f = fields[k]
      local shape = { n }
      for i = 1, #f.shape do shape[i + 1] = f.shape[i] end
      batch[f.name] = tensor.view(f.dtype.name, shape, bases[k])
    end
    ctx.index, ctx.position = nil, nil
    current.batch, current.epoch, current.stage = ctx.batch, epoch, batch_stage
    rng:reset(seed, rngs.BATCH, epoch, ctx.batch)
    arena:reset()
    P.map_batch(batch, ctx)
    current.stage, current.batch = nil, nil
  end
end

local function make_out_views()
  out = {}
  for _, f in ipairs(fields) do
    out[f.name] = tensor.view(f.dtype.name, f.shape, nil)
  end
  ctx.out = out
end

-- ctx.out before the fields are known (while inferring them).
local function undeclared_out()
  return setmetatable({}, { __index = function(_, name)
    fail("%s: ctx.out.%s needs declared fields; declare `fields` in %s, or return tensors "
      .. "made with ctx:tensor(dtype, shape) and let sluice infer the fields", map_stage or source_stage,
      tostring(name), path_name)
  end })
end

-- Fields from what map returned for sample `index`, in name order.
local function infer_fields(result, index)
  if result == nil or type(result) ~= "table" or is_tensor(result) then
    write_result(result, 0)  -- fails with the message for a missing or non-table result
  end
  local names = {}
  for name in pairs(result) do
    if type(name) ~= "string" then
      fail("%s returned a table with the non-string key %s for sample %d; fields are named by strings",
        who(), tostring(name), index)
    end
    names[#names + 1] = name
  end
  if #names == 0 then fail("%s returned an empty table for sample %d; it must return fields", who(), index) end
  table.sort(names)
  local list, notes = {}, {}
  for i, name in ipairs(names) do
    local v = result[name]
    local dt, shape
    if is_tensor(v) then
      dt, shape = tensor.dtype(v.dtype), v.shape
    elseif type(v) == "boolean" then
      dt, shape = tensor.dtype("bool"), {}
    elseif type(v) == "number" then
      dt, shape = tensor.dtype(v == floor(v) and "int64" or "float64"), {}
      notes[#notes + 1] = format("field '%s' inferred as %s from the number %s; declare fields to choose "
        .. "another dtype", name, dt.name, tostring(v))
    elseif type(v) == "cdata" and ffi.istype("int64_t", v) then
      dt, shape = tensor.dtype("int64"), {}
    elseif type(v) == "cdata" and ffi.istype("uint64_t", v) then
      dt, shape = tensor.dtype("uint64"), {}
    else
      fail("%s: field '%s' of sample %d is a %s; a field value is a tensor (ctx:tensor, sluice.tensor) "
        .. "or a number", who(), name, index, type(v) == "cdata" and tostring(ffi.typeof(v)) or ("Lua " .. type(v)))
    end
    list[i] = { name = name, dtype = dt, shape = shape }
  end
  return list, notes
end

-- Make sample `index` (epoch 0) as a one-sample batch in scratch memory:
-- every check a worker makes, before any worker exists.
local function dry_run(index)
  local buffers, data = {}, ffi.new("void*[?]", math.max(#fields, 1))
  for k, f in ipairs(fields) do
    buffers[k] = sluice.tensor("uint8", { math.max(f.nbytes, 1) })
    data[k - 1] = buffers[k].data
  end
  local samples = ffi.new("uint64_t[1]", index)
  local view = ffi.new("sluice_fill_view", { epoch = 0, batch = 0, worker = 0, size = 1,
    samples = samples, data = data, host = host })
  M.fill(view)
end

-- A native source's description for the host (with the pipeline's on_error
-- and seed, which the readers need), or nil for sluice.range.
function M.source_spec()
  local source = P.source
  if not source.native then return nil end
  local spec = {}
  for k, v in pairs(source.spec) do spec[k] = v end
  spec.signature = source.signature
  spec.on_error, spec.seed = P.on_error, P.seed
  spec.pack, spec.shuffle = P.pack, P.shuffle  -- token sources: packing; a mixture shuffles its sources' rows
  return spec
end

-- The fields of a Parquet source without a map or declared fields: its
-- columns, from the schema, never from a row's values (a row's string or
-- list would fix a size the next row breaks). A column whose values vary in
-- size by row (strings, lists) needs its field declared. Sorted by name, as
-- fields inferred from a sample are. `schema`: describe's `parquet` argument,
-- from the host: { file, columns = { { name, dtype = code or nil (bytes),
-- list, fixed_bytes, type } }, max_fields }.
local function schema_fields(schema)
  local list, described = {}, {}
  if #schema.columns > schema.max_fields then
    fail("%s: sluice.parquet: %s has %d columns and without a map the columns are the fields, but a batch holds "
      .. "at most %d fields: select the ones to read, columns = { 'a', 'b', ... }, or gather them in a map into "
      .. "fewer fields (a map returning { x = ... } with fields = { { 'x', 'float32', { N } } })",
      path_name, schema.file, #schema.columns, schema.max_fields)
  end
  for _, c in ipairs(schema.columns) do
    local dt, shape
    if c.list then
      local name = DTYPES[c.dtype + 1].name
      fail("%s: sluice.parquet: %s: column '%s' holds lists of %s, whose length the schema does not fix, and "
        .. "without a map the columns are the fields: declare the field with the list's length, fields = { "
        .. "{ '%s', '%s', { N } }, ... } (a row of another length is an error), or make the fields in a map",
        path_name, schema.file, c.name, c.type, c.name, name)
    elseif c.dtype ~= nil then
      dt, shape = DTYPES[c.dtype + 1], {}
    elseif c.fixed_bytes > 0 then
      dt, shape = tensor.dtype("uint8"), { c.fixed_bytes }
    else
      fail("%s: sluice.parquet: %s: column '%s' holds %s values, whose size varies by row, and without a map "
        .. "the columns are the fields: declare the field with the most bytes a row holds, fields = { "
        .. "{ '%s', 'bytes', N }, ... } (a longer row is an error), or make the fields in a map",
        path_name, schema.file, c.name, c.type, c.name)
    end
    list[#list + 1] = { name = c.name, dtype = dt, shape = shape }
  end
  table.sort(list, function(a, b) return a.name < b.name end)
  for i, f in ipairs(list) do described[i] = f.name .. " " .. tensor.describe(f.dtype.name, f.shape) end
  return list, format("fields from the Parquet schema of %s: %s", schema.file, table.concat(described, ", "))
end

-- The trial: infer the fields from sample `index` when they are not
-- declared, then make it as a one-row batch. Returns the field list and notes.
local TRIAL_SAMPLES = 16

local function trial(index, the_seed, declared)
  local list, notes = declared or P.fields, {}
  if list == nil then
    prepare({}, the_seed)
    ctx.out = undeclared_out()
    ctx.epoch, ctx.batch, ctx.worker, ctx.size = 0, 0, 0, 1
    local result = run_map(index, 0, 0)
    current.stage = nil
    local inferred
    list, inferred = infer_fields(result, index)
    local described = {}
    for i, f in ipairs(list) do described[i] = f.name .. " " .. tensor.describe(f.dtype.name, f.shape) end
    notes[1] = format("fields inferred from sample %d: %s", index, table.concat(described, ", "))
    for _, n in ipairs(inferred) do notes[#notes + 1] = n end
  end
  prepare(list, the_seed)
  make_out_views()
  dry_run(index)
  return list, notes
end

local function auto_zero(v) return v == "auto" and 0 or v end

-- crashed: nil, or { [index] = message } of samples whose trial ended the
-- child process that made it (trial_child.h): met as failures, not made
-- again. report: nil, or a function told each sample's index before its
-- trial (in that child).
function M.describe(epochs, workers, prefetch, seed_override, source_size, the_host, on_error_override, parquet,
                    crashed, report)
  local notes = {}
  host = ffi.cast("void*", the_host)
  if P.source.native then P.source.size = source_size end
  if P.device == "cuda" then
    fail('%s: device = "cuda" is not supported yet: sluice delivers batches in host memory; '
      .. 'use device = "cpu"', path_name)
  elseif P.device == "auto" then
    notes[#notes + 1] = 'device = "auto" runs on the cpu: GPU delivery is not supported yet'
  end
  local the_seed = seed_override or P.seed
  local on_error = on_error_override or P.on_error
  -- A Parquet source's fields from its schema, once: a column they cannot
  -- hold is the run's error under any on_error, not a failed sample's.
  local declared
  if P.fields == nil and parquet ~= nil and P.map == nil then
    declared, notes[#notes + 1] = schema_fields(parquet)
  end
  local function try(index)
    if crashed ~= nil and crashed[index] ~= nil then
      -- Not made again; a stream's record is taken all the same, so that
      -- the next try reads the record after it, as a worker's skip does.
      if P.source.native then api.feed_take(host, 0, index, record) end
      fail("%s", crashed[index])
    end
    if report ~= nil then report(index) end
    return trial(index, the_seed, declared)
  end
  local list, found
  if on_error ~= "skip" then
    list, found = try(0)  -- a failure is the run's error, as it would be in a worker
  else
    local tries = math.max(1, math.min(TRIAL_SAMPLES, P.source.size))
    local failed = {}
    for index = 0, tries - 1 do
      local ok, result, more = xpcall(try, M.message_handler, index)
      current.stage, current.index, current.batch = nil, nil, nil
      if ok then
        list, found = result, more
        break
      end
      failed[#failed + 1] = result
    end
    if list == nil then
      fail('%s: on_error = "skip", but %s %d sample%s failed in the trial run (the load makes '
        .. "one sample, in a child process first, to infer the fields and check the pipeline); sample 0: %s", path_name,
        tries == P.source.size and "all" or "each of the first", tries, tries == 1 and "" or "s", failed[1])
    end
    if #failed > 0 then
      notes[#notes + 1] = format('on_error = "skip": sample%s 0%s failed in the trial run and will be '
        .. "skipped by the workers; sample 0: %s", #failed == 1 and "" or "s",
        #failed == 1 and "" or ("-" .. (#failed - 1)), (failed[1]:match("^[^\n]*")))
    end
  end
  for _, n in ipairs(found) do notes[#notes + 1] = n end

  local plain = {}
  for i, f in ipairs(fields) do
    local shape = {}
    for d = 1, #f.shape do shape[d] = f.shape[d] end
    plain[i] = { name = f.name, dtype = f.dtype.code, shape = shape, bytes = f.bytes }
  end
  return {
    dataset_size = P.source.size,
    batch_size = P.batch_size,
    drop_last = P.drop_last,
    shuffle = P.shuffle and P.source.kind ~= "mix",  -- a mixture's order is its schedule
    shuffle_window = P.shuffle_window,
    seed = the_seed,
    epochs = epochs or P.epochs,
    workers = auto_zero(workers or P.workers),    -- 0: auto (kAutoWorkers)
    prefetch = auto_zero(prefetch or P.prefetch),  -- 0: the runtime's default
    memory_budget_mb = P.memory_budget_mb,
    ordered = P.ordered,
    on_error = on_error,
    skip_fill = P.skip_fill,
    read_ahead = P.read_ahead,
    io_threads = P.io_threads,
    device = "cpu",
    fields = plain,
    notes = notes,
  }
end

-- spec (from the host, what describe returned in the launching process):
-- { dataset_size, seed, fields = {{name, dtype = code, shape}}, source_signature }.
function M.start_worker(spec)
  if P.source.native then
    if P.source.signature ~= spec.source_signature then
      fail("%s describes another data source in this worker than in the launching process (%s); "
        .. "a pipeline script must describe the same pipeline every time it runs",
        path_name, P.source.kind)
    end
    P.source.size = spec.dataset_size
  end
  if P.source.size ~= spec.dataset_size then
    fail("%s describes %d samples in this worker but %d in the launching process; "
      .. "a pipeline script must describe the same pipeline every time it runs",
      path_name, P.source.size, spec.dataset_size)
  end
  local list = {}
  for i, f in ipairs(spec.fields) do
    list[i] = { name = f.name, dtype = tensor.DTYPES[f.dtype + 1], shape = f.shape, bytes = f.bytes }
  end
  prepare(list, spec.seed)
  make_out_views()
end

return M
