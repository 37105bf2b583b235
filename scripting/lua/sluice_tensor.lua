-- sluice.tensor: typed n-dimensional buffers over memory outside the Lua heap.
--
-- A tensor is a small Lua table:
--   t.data    typed FFI pointer to the first element (uint8_t*, float*, ...;
--             uint16_t* for float16 and bfloat16, whose bits sluice converts)
--   t.dtype   canonical dtype name ("uint8", "float32", ...)
--   t.shape   array of dimensions, C order ({} for a scalar)
--   t.numel   element count; t.nbytes: byte count
-- Its memory is one of: a batch slot in shared memory (ctx.out, map_batch
-- views), a worker's per-sample scratch arena (ctx:tensor), malloc'd memory
-- freed by the GC (sluice.tensor), or memory the caller owns (sluice.view).
-- Bulk data never lives in the Lua heap.
local ffi = require("ffi")
local native = require("sluice.native")

local api = native.api
local floor = math.floor

local M = {}

-- The dtypes, in the order of sluice::DType (runtime/include/sluice/dtype.h);
-- `code` is that enum's value.
local DTYPES = {  -- integer kinds: values in [min, limit)
  { name = "uint8",    short = "u8",   ctype = "uint8_t",  kind = "int", min = 0,      limit = 2^8 },
  { name = "int8",     short = "i8",   ctype = "int8_t",   kind = "int", min = -2^7,   limit = 2^7 },
  { name = "uint16",   short = "u16",  ctype = "uint16_t", kind = "int", min = 0,      limit = 2^16 },
  { name = "int16",    short = "i16",  ctype = "int16_t",  kind = "int", min = -2^15,  limit = 2^15 },
  { name = "uint32",   short = "u32",  ctype = "uint32_t", kind = "int", min = 0,      limit = 2^32 },
  { name = "int32",    short = "i32",  ctype = "int32_t",  kind = "int", min = -2^31,  limit = 2^31 },
  { name = "uint64",   short = "u64",  ctype = "uint64_t", kind = "int", min = 0,      limit = 2^64 },
  { name = "int64",    short = "i64",  ctype = "int64_t",  kind = "int", min = -2^63,  limit = 2^63 },
  { name = "float16",  short = "f16",  ctype = "uint16_t", kind = "f16" },
  { name = "bfloat16", short = "bf16", ctype = "uint16_t", kind = "bf16" },
  { name = "float32",  short = "f32",  ctype = "float",    kind = "float" },
  { name = "float64",  short = "f64",  ctype = "double",   kind = "float" },
  { name = "bool",     short = "boolean", ctype = "bool",  kind = "bool" },
}

local by_name = {}
for code, dt in ipairs(DTYPES) do
  dt.code = code - 1
  dt.size = ffi.sizeof(dt.ctype)
  dt.pointer = ffi.typeof(dt.ctype .. "*")
  by_name[dt.name] = dt
  by_name[dt.short] = dt
end
M.DTYPES = DTYPES

local NAMES = {}
for i, dt in ipairs(DTYPES) do NAMES[i] = dt.name end
M.DTYPE_NAMES = table.concat(NAMES, ", ")

-- The dtype record for a name, or nil.
function M.dtype(name)
  return by_name[name]
end

-- A copy of `shape` as an array of non-negative integers, or nil and a reason.
-- A number n means {n}; nil means a scalar {}.
function M.check_shape(shape)
  if shape == nil then return {} end
  if type(shape) == "number" then shape = { shape } end
  if type(shape) ~= "table" then return nil, "a shape must be an array of integers, got a " .. type(shape) end
  local out = {}
  for i = 1, #shape do
    local d = shape[i]
    if type(d) ~= "number" or d < 0 or d ~= floor(d) then
      return nil, "dimension " .. i .. " of the shape is " .. tostring(d) .. ", not a non-negative integer"
    end
    out[i] = d
  end
  return out
end

function M.numel(shape)
  local n = 1
  for i = 1, #shape do n = n * shape[i] end
  return n
end

-- "float32[3,224,224]"; a scalar is "int64[]".
function M.describe(dtype_name, shape)
  return dtype_name .. "[" .. table.concat(shape, ",") .. "]"
end

local Tensor = {}
Tensor.__index = Tensor
M.Tensor = Tensor

function Tensor:__tostring()
  return "tensor " .. M.describe(self.dtype, self.shape)
end

-- Set every element to x (a number; booleans for bool tensors).
function Tensor:fill(x)
  local dt = by_name[self.dtype]
  local p, n = self.data, self.numel
  if dt.kind == "f16" then x = api.f32_to_f16(x) elseif dt.kind == "bf16" then x = api.f32_to_bf16(x) end
  for i = 0, n - 1 do p[i] = x end
  return self
end

-- Element i (0-based, flat) as a Lua number, converting float16/bfloat16.
function Tensor:get(i)
  local kind = by_name[self.dtype].kind
  local v = self.data[i]
  if kind == "f16" then return api.f16_to_f32(v) elseif kind == "bf16" then return api.bf16_to_f32(v) end
  return tonumber(v) or v
end

-- Store x at element i (0-based, flat), converting float16/bfloat16.
function Tensor:set(i, x)
  local kind = by_name[self.dtype].kind
  if kind == "f16" then x = api.f32_to_f16(x) elseif kind == "bf16" then x = api.f32_to_bf16(x) end
  self.data[i] = x
end

-- Copy src's bytes into this tensor; dtype and element count must agree.
function Tensor:copy(src)
  if src.dtype ~= self.dtype or src.numel ~= self.numel then
    error("tensor:copy: " .. tostring(src) .. " into " .. tostring(self), 2)
  end
  ffi.copy(self.data, src.data, self.nbytes)
  return self
end

-- The same memory seen with another shape of the same element count.
function Tensor:reshape(shape)
  local s, why = M.check_shape(shape)
  if not s then error("tensor:reshape: " .. why, 2) end
  if M.numel(s) ~= self.numel then
    error("tensor:reshape: " .. tostring(self) .. " has " .. self.numel .. " elements, "
      .. M.describe(self.dtype, s) .. " needs " .. M.numel(s), 2)
  end
  return M.view(self.dtype, s, self.data, self.owner)
end

function M.is_tensor(x)
  return getmetatable(x) == Tensor
end

local function resolve(dtype, shape, fn)
  local dt = by_name[dtype]
  if not dt then
    error(fn .. ": unknown dtype " .. tostring(dtype) .. " (one of " .. M.DTYPE_NAMES .. ")", 3)
  end
  local s, why = M.check_shape(shape)
  if not s then error(fn .. ": " .. why, 3) end
  return dt, s
end

local function make(dt, shape, pointer, owner)
  local n = M.numel(shape)
  return setmetatable({
    data = ffi.cast(dt.pointer, pointer),
    dtype = dt.name,
    shape = shape,
    numel = n,
    nbytes = n * dt.size,
    owner = owner,  -- keeps the memory alive while the tensor is
  }, Tensor)
end

-- A tensor over memory the caller keeps alive (an FFI array, a pointer);
-- `owner`, if given, is referenced by the tensor to anchor that memory.
function M.view(dtype, shape, pointer, owner)
  local dt, s = resolve(dtype, shape, "sluice.view")
  return make(dt, s, pointer, owner)
end

-- A new zeroed tensor in malloc'd memory, freed when the tensor is collected.
-- For long-lived data (tables, constants); per-sample buffers use ctx:tensor.
function M.new(dtype, shape)
  local dt, s = resolve(dtype, shape, "sluice.tensor")
  local bytes = M.numel(s) * dt.size
  local p = api.alloc(bytes)
  if p == nil then error("sluice.tensor: out of memory (" .. bytes .. " bytes)", 2) end
  ffi.fill(p, bytes)
  local owner = ffi.gc(ffi.cast("void*", p), api.release)
  return make(dt, s, owner, owner)
end

-- A bump allocator of 64-byte aligned scratch memory, reset wholesale. Blocks
-- are malloc'd; after a reset that found more than one block in use they are
-- merged into one, so steady state is one block and no allocation.
local Arena = {}
Arena.__index = Arena

function M.arena()
  return setmetatable({ blocks = {}, base = nil, capacity = 0, used = 0 }, Arena)
end

function Arena:reset()
  local blocks = self.blocks
  if #blocks > 1 then
    local total = 0
    for i = 1, #blocks do
      total = total + blocks[i].capacity
      api.release(ffi.gc(blocks[i].base, nil))
    end
    self.blocks = {}
    self.base, self.capacity = nil, 0
    self:grow(total)
  end
  self.used = 0
end

-- Start a new block of `capacity` bytes; earlier blocks stay valid until reset.
-- A block is freed by its finalizer if the Lua state closes first.
function Arena:grow(capacity)
  local base = api.alloc(capacity)
  if base == nil then error("sluice: out of memory for scratch tensors (" .. capacity .. " bytes)", 0) end
  base = ffi.gc(ffi.cast("char*", base), api.release)
  self.blocks[#self.blocks + 1] = { base = base, capacity = capacity }
  self.base, self.capacity, self.used = base, capacity, 0
end

function Arena:alloc(bytes)
  local offset = floor((self.used + 63) / 64) * 64
  if offset + bytes > self.capacity then
    self:grow(math.max(bytes, 2 * self.capacity, 1048576))
    offset = 0
  end
  self.used = offset + bytes
  return self.base + offset
end

-- A tensor in the arena, valid until its next reset.
function Arena:tensor(dtype, shape)
  local dt, s = resolve(dtype, shape, "ctx:tensor")
  return make(dt, s, self:alloc(M.numel(s) * dt.size), nil)
end

return M
