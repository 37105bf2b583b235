-- sluice.image: native image ops (runtime/ops) for pipeline.lua.
--
--   local image = require("sluice.image")
--   map = function(s, ctx)                       -- s from sluice.files{...}
--     local info = image.info(s.bytes, s.path)
--     local box = image.random_resized_crop(info.width, info.height, ctx.rng)
--     local img = image.decode(s.bytes, { name = s.path, scale = image.shrink(box, 224, 224) })
--     local crop = image.resize(img, ctx:tensor("uint8", { 224, 224, 3 }), { box = box })
--     image.normalize(crop, ctx.out.image, { mean = image.IMAGENET_MEAN, std = image.IMAGENET_STD,
--                                            flip = ctx.rng:bernoulli(0.5) })
--     return { image = ctx.out.image, label = ... }
--   end
--
-- Images are uint8 or uint16 tensors of shape {height, width, channels} (HWC).
-- `bytes` is a uint8 tensor (a sample's .bytes) or an FFI pointer, with
-- opts.size giving its length. Decoded images live in this worker's decoder
-- memory until its next decode; every other op writes the tensor it is given
-- (ctx:tensor scratch, ctx.out.NAME in the batch slot). Failures raise Lua
-- errors naming the file, so the pipeline's on_error policy applies.
--
--   image.info(bytes, name [, opts])   -> {width, height, channels, bit_depth, orientation, format};
--                                         opts: exif (false), strict (false), size (as in
--                                         decode), or a boolean for exif
--   image.decode(bytes, opts)          -> tensor; opts: name, size, channels (3), dtype ("uint8"),
--                                         scale (1: JPEGs may decode at 1/2, 1/4, 1/8 while
--                                         keeping at least this fraction), exif (false), max_pixels,
--                                         strict (false: JPEG warnings other than truncation decode
--                                         as PIL does; true: any warning is an error)
--   image.random_resized_crop(w, h, rng, opts) -> box {x0, y0, x1, y1}; opts: scale {0.08, 1},
--                                         ratio {3/4, 4/3}, attempts (10)
--   image.shrink(box, height, width)   -> the decode scale a resize of box to height x width needs
--   image.resize(src, dst, opts)       -> dst; opts: box (full-size coordinates; default all),
--                                         filter ("bilinear" | "area")
--   image.crop(src, box, dst)          -> dst, the box of src copied (box as in resize)
--   image.flip(src [, dst])            -> dst (default: src, in place), mirrored left to right
--   image.pad(src, dst, top, left [, fill]) -> dst
--   image.normalize(src, dst, opts)    -> dst: (x * scale - mean) / std as dst's dtype (float32,
--                                         float16, uint8); opts: mean, std, scale (1/max; into
--                                         uint8 with no mean or std, values kept), flip,
--                                         layout ("chw" for a {C,H,W} dst, "hwc")
--   image.cast(src, dst [, layout])    -> dst, values kept
--   image.encode_jpeg(src, opts)      -> uint8 tensor of JPEG bytes (libjpeg-turbo; what PIL's
--                                         save(quality=q) writes: 4:2:0, baseline), valid until
--                                         this worker's next encode_jpeg: return it as a bytes
--                                         field. src: uint8 {H, W, 3} or {H, W[, 1]}; opts: quality
--                                         (1..100, default 90)
--   image.decode_crop(bytes, box, dst, opts) -> dst: decode + resize + normalize in one call, the
--                                         same values bit for bit: decodes only the pixels of box
--                                         (full-size, as random_resized_crop gives it) at the
--                                         smallest DCT scale that keeps it >= dst's size, then
--                                         resizes, flips and normalizes them into dst in one pass.
--                                         dst: {C, H, W} float32/float16/uint8 (layout "chw") or
--                                         {H, W, C} ("hwc"), C = 1, 3 or 4 channels decoded;
--                                         opts: name, size, exif, strict, max_pixels (as decode),
--                                         filter (as resize), mean, std, scale, flip, layout (as
--                                         normalize)
local ffi = require("ffi")
require("sluice.native")  -- declares sluice_rng
local tensor = require("sluice.tensor")

ffi.cdef[[
typedef struct sluice_image_workspace sluice_image_workspace;
typedef struct sluice_image_desc {
  void* data; int32_t height, width, channels, dtype; uint64_t stride;
} sluice_image_desc;
typedef struct sluice_image_box { double x0, y0, x1, y1; } sluice_image_box;
typedef struct sluice_image_info {
  int32_t format, width, height, channels, bit_depth, orientation;
} sluice_image_info;
typedef struct sluice_decode_args {
  int32_t channels, dtype, apply_exif_orientation, strict; double scale; uint64_t max_pixels;
} sluice_decode_args;
typedef struct sluice_rrc_args {
  double scale_min, scale_max, ratio_min, ratio_max; int32_t attempts;
} sluice_rrc_args;
typedef struct sluice_normalize_args {
  int32_t dtype, layout, flip; float mean[4], std[4], scale;
} sluice_normalize_args;
typedef struct sluice_image_api {
  sluice_image_workspace* (*workspace_new)();
  void (*workspace_free)(sluice_image_workspace* ws);
  int (*info)(sluice_image_workspace*, const uint8_t*, uint64_t, const char*,
              const sluice_decode_args*, sluice_image_info*, char*, uint64_t);
  int (*decode)(sluice_image_workspace*, const uint8_t*, uint64_t, const char*,
                const sluice_decode_args*, sluice_image_desc*, int32_t*, char*, uint64_t);
  int (*random_resized_crop)(int32_t, int32_t, sluice_rng*, const sluice_rrc_args*,
                             sluice_image_box*, char*, uint64_t);
  int (*resize)(sluice_image_workspace*, const sluice_image_desc*, const sluice_image_box*,
                const sluice_image_desc*, int32_t, char*, uint64_t);
  int (*flip)(const sluice_image_desc*, const sluice_image_desc*, char*, uint64_t);
  int (*pad)(const sluice_image_desc*, const sluice_image_desc*, int32_t, int32_t, const int32_t*,
             char*, uint64_t);
  int (*normalize)(const sluice_image_desc*, void*, const sluice_normalize_args*, char*, uint64_t);
  int (*decode_crop)(sluice_image_workspace*, const uint8_t*, uint64_t, const char*,
                     const sluice_decode_args*, const sluice_image_box*, int32_t, int32_t, int32_t,
                     const sluice_normalize_args*, void*, char*, uint64_t);
  int (*encode_jpeg)(sluice_image_workspace*, const sluice_image_desc*, int32_t, const uint8_t**,
                     uint64_t*, char*, uint64_t);
} sluice_image_api;
]]

local M = {}

M.IMAGENET_MEAN = { 0.485, 0.456, 0.406 }
M.IMAGENET_STD = { 0.229, 0.224, 0.225 }

local C          -- the sluice_image_api table
local ws         -- this state's workspace (decoder and resampler scratch)
local ERR_SIZE = 1024
local err = ffi.new("char[?]", ERR_SIZE)
local src_desc, dst_desc = ffi.new("sluice_image_desc"), ffi.new("sluice_image_desc")
local box_c = ffi.new("sluice_image_box")
local info_c = ffi.new("sluice_image_info")
local decode_args = ffi.new("sluice_decode_args")
local info_args = ffi.new("sluice_decode_args")
local rrc_args = ffi.new("sluice_rrc_args")
local norm_args = ffi.new("sluice_normalize_args")
local divisor_c = ffi.new("int32_t[1]")
local jpeg_out, jpeg_size = ffi.new("const uint8_t*[1]"), ffi.new("uint64_t[1]")
local fill_c = ffi.new("int32_t[4]")
local u8_ptr = ffi.typeof("const uint8_t*")
local FORMATS = { [0] = "jpeg", [1] = "png" }

-- Called by the host (scripting/src/image_api.cpp) while it sets the state up.
function M.init(api_pointer, api_size)
  if ffi.sizeof("sluice_image_api") ~= api_size then
    error("sluice.image: sluice_image_api layout differs between C++ and Lua", 0)
  end
  C = ffi.cast("const sluice_image_api*", api_pointer)
end

local function check(status)
  if status ~= 0 then error(ffi.string(err), 3) end
end

local function workspace()
  if ws == nil then
    local p = C.workspace_new()
    if p == nil then error("sluice.image: out of memory for the decoder", 3) end
    ws = ffi.gc(p, C.workspace_free)
  end
  return ws
end

local function bytes_of(bytes, size)
  if tensor.is_tensor(bytes) then return ffi.cast(u8_ptr, bytes.data), bytes.nbytes end
  if type(bytes) == "cdata" and size then return ffi.cast(u8_ptr, bytes), size end
  error("sluice.image: bytes must be a uint8 tensor, or a pointer with opts.size", 3)
end

-- Fill an FFI image descriptor from an HWC tensor.
local function describe(t, d, what)
  if not tensor.is_tensor(t) then error("sluice.image: " .. what .. " must be a tensor", 3) end
  local shape = t.shape
  local h, w, c = shape[1], shape[2], shape[3] or 1
  if #shape < 2 or #shape > 3 then
    error("sluice.image: " .. what .. " must have shape {height, width[, channels]}, not "
      .. tensor.describe(t.dtype, shape), 3)
  end
  local dt = tensor.dtype(t.dtype)
  d.data, d.height, d.width, d.channels, d.dtype = t.data, h, w, c, dt.code
  d.stride = w * c * dt.size
  return d
end

-- The keys each function's opts may have. A misspelt key ("flipp = true")
-- would otherwise be ignored without a word, so it is an error naming the key
-- and the valid ones.
local VALID_OPTS = {
  info = { "exif", "strict", "size" },
  decode = { "name", "size", "channels", "dtype", "exif", "strict", "scale", "max_pixels" },
  random_resized_crop = { "scale", "ratio", "attempts" },
  resize = { "box", "filter" },
  normalize = { "mean", "std", "scale", "flip", "layout" },
  decode_crop = { "name", "size", "exif", "strict", "max_pixels", "filter", "mean", "std", "scale", "flip",
                  "layout" },
  encode_jpeg = { "quality" },
}
local VALID_SET = {}
for fname, keys in pairs(VALID_OPTS) do
  VALID_SET[fname] = {}
  for _, k in ipairs(keys) do VALID_SET[fname][k] = true end
end

local function check_opts(fname, opts)
  if opts == nil then return end
  if type(opts) ~= "table" then
    error("sluice.image." .. fname .. ": opts must be a table, not a " .. type(opts), 3)
  end
  local valid = VALID_SET[fname]
  for k in pairs(opts) do
    if not valid[k] then
      error("sluice.image." .. fname .. ": unknown option '" .. tostring(k) .. "'; the options are "
        .. table.concat(VALID_OPTS[fname], ", "), 3)
    end
  end
end

-- norm_args from normalize's opts, for writing the tensor dst.
local function normalize_args(opts, dst, fname)
  local mean, std = opts.mean or {}, opts.std or {}
  for k = 0, 3 do
    norm_args.mean[k] = mean[k + 1] or 0
    norm_args.std[k] = std[k + 1] or 1
  end
  norm_args.dtype = tensor.dtype(dst.dtype).code
  local layout = opts.layout or "chw"
  if layout ~= "chw" and layout ~= "hwc" then
    error(fname .. ": layout must be \"chw\" or \"hwc\", not " .. tostring(layout), 3)
  end
  norm_args.layout = layout == "chw" and 0 or 1
  norm_args.flip = opts.flip and 1 or 0
  norm_args.scale = opts.scale or 0
  return layout
end

local function filter_code(filter, fname)
  filter = filter or "bilinear"
  if filter ~= "bilinear" and filter ~= "area" then
    error(fname .. ": filter must be \"bilinear\" or \"area\", not " .. tostring(filter), 3)
  end
  return filter == "area" and 1 or 0
end

function M.info(bytes, name, opts)
  local exif, strict, size = opts, false, nil
  if type(opts) == "table" then
    check_opts("info", opts)
    exif, strict, size = opts.exif, opts.strict, opts.size
  end
  local p, n = bytes_of(bytes, size)
  info_args.apply_exif_orientation = exif and 1 or 0
  info_args.strict = strict and 1 or 0
  check(C.info(workspace(), p, n, name or "(unnamed image)", info_args, info_c, err, ERR_SIZE))
  return { width = info_c.width, height = info_c.height, channels = info_c.channels,
           bit_depth = info_c.bit_depth, orientation = info_c.orientation, format = FORMATS[info_c.format] }
end

function M.decode(bytes, opts)
  check_opts("decode", opts)
  opts = opts or {}
  local p, n = bytes_of(bytes, opts.size)
  local dt = tensor.dtype(opts.dtype or "uint8")
  if dt == nil then error("sluice.image.decode: unknown dtype " .. tostring(opts.dtype), 2) end
  decode_args.channels = opts.channels or 3
  decode_args.dtype = dt.code
  decode_args.apply_exif_orientation = opts.exif and 1 or 0
  decode_args.strict = opts.strict and 1 or 0
  decode_args.scale = opts.scale or 1
  decode_args.max_pixels = opts.max_pixels or 2^27
  check(C.decode(workspace(), p, n, opts.name or "(unnamed image)", decode_args, dst_desc, divisor_c,
    err, ERR_SIZE))
  local t = tensor.view(dt.name, { dst_desc.height, dst_desc.width, dst_desc.channels }, dst_desc.data, ws)
  t.scale_divisor = divisor_c[0]
  return t
end

function M.random_resized_crop(width, height, rng, opts)
  check_opts("random_resized_crop", opts)
  opts = opts or {}
  local scale, ratio = opts.scale or { 0.08, 1 }, opts.ratio or { 3 / 4, 4 / 3 }
  rrc_args.scale_min, rrc_args.scale_max = scale[1], scale[2]
  rrc_args.ratio_min, rrc_args.ratio_max = ratio[1], ratio[2]
  rrc_args.attempts = opts.attempts or 10
  check(C.random_resized_crop(width, height, rng, rrc_args, box_c, err, ERR_SIZE))
  return { x0 = box_c.x0, y0 = box_c.y0, x1 = box_c.x1, y1 = box_c.y1 }
end

-- box as random_resized_crop returns it, or an error naming the caller's line.
local function checked_box(box, fname)
  if type(box) ~= "table" or type(box.x0) ~= "number" or type(box.y0) ~= "number" or type(box.x1) ~= "number"
      or type(box.y1) ~= "number" then
    local got = type(box) ~= "table" and type(box)
      or (box[1] ~= nil and "an array") or (box.width ~= nil and "{x, y, width, height}") or "a table without them"
    error(fname .. ": box must be {x0 =, y0 =, x1 =, y1 =} (as image.random_resized_crop returns it), not "
      .. got, 3)
  end
  return box
end

function M.shrink(box, height, width)
  checked_box(box, "sluice.image.shrink")
  return math.max(height / (box.y1 - box.y0), width / (box.x1 - box.x0))
end

function M.resize(src, dst, opts)
  check_opts("resize", opts)
  opts = opts or {}
  local s = describe(src, src_desc, "resize's source")
  describe(dst, dst_desc, "resize's destination")
  local box, d = opts.box, src.scale_divisor or 1
  if box then
    checked_box(box, "sluice.image.resize")
    box_c.x0, box_c.y0, box_c.x1, box_c.y1 = box.x0 / d, box.y0 / d, box.x1 / d, box.y1 / d
    -- A DCT-downscaled decode rounds its size up: keep the box inside.
    if box_c.x1 > s.width then box_c.x1 = s.width end
    if box_c.y1 > s.height then box_c.y1 = s.height end
  else
    box_c.x0, box_c.y0, box_c.x1, box_c.y1 = 0, 0, s.width, s.height
  end
  local filter = filter_code(opts.filter, "sluice.image.resize")
  check(C.resize(workspace(), src_desc, box_c, dst_desc, filter, err, ERR_SIZE))
  return dst
end

function M.crop(src, box, dst)
  return M.resize(src, dst, { box = checked_box(box, "sluice.image.crop") })
end

function M.flip(src, dst)
  dst = dst or src
  check(C.flip(describe(src, src_desc, "flip's source"), describe(dst, dst_desc, "flip's destination"),
    err, ERR_SIZE))
  return dst
end

function M.pad(src, dst, top, left, fill)
  fill = fill or {}
  for k = 0, 3 do fill_c[k] = fill[k + 1] or 0 end
  check(C.pad(describe(src, src_desc, "pad's source"), describe(dst, dst_desc, "pad's destination"),
    top, left, fill_c, err, ERR_SIZE))
  return dst
end

function M.normalize(src, dst, opts)
  check_opts("normalize", opts)
  opts = opts or {}
  local s = describe(src, src_desc, "normalize's source")
  if not tensor.is_tensor(dst) then error("sluice.image.normalize: the destination must be a tensor", 2) end
  if dst.numel ~= s.height * s.width * s.channels then
    error("sluice.image.normalize: " .. tostring(dst) .. " does not hold a " .. s.height .. "x" .. s.width
      .. "x" .. s.channels .. " image", 2)
  end
  normalize_args(opts, dst, "sluice.image.normalize")
  check(C.normalize(src_desc, dst.data, norm_args, err, ERR_SIZE))
  return dst
end

function M.decode_crop(bytes, box, dst, opts)
  check_opts("decode_crop", opts)
  opts = opts or {}
  local p, n = bytes_of(bytes, opts.size)
  if not tensor.is_tensor(dst) or #dst.shape ~= 3 then
    error("sluice.image.decode_crop: the destination must be a {C, H, W} or {H, W, C} tensor", 2)
  end
  local layout = normalize_args(opts, dst, "sluice.image.decode_crop")
  local shape = dst.shape
  local c, h, w = shape[1], shape[2], shape[3]
  if layout == "hwc" then h, w, c = shape[1], shape[2], shape[3] end
  if c ~= 1 and c ~= 3 and c ~= 4 then
    error("sluice.image.decode_crop: " .. tostring(dst) .. " has " .. c .. " channels, not 1, 3 or 4", 2)
  end
  decode_args.channels = c
  decode_args.dtype = 0
  decode_args.apply_exif_orientation = opts.exif and 1 or 0
  decode_args.strict = opts.strict and 1 or 0
  decode_args.scale = 1
  decode_args.max_pixels = opts.max_pixels or 2^27
  checked_box(box, "sluice.image.decode_crop")
  box_c.x0, box_c.y0, box_c.x1, box_c.y1 = box.x0, box.y0, box.x1, box.y1
  check(C.decode_crop(workspace(), p, n, opts.name or "(unnamed image)", decode_args, box_c, h, w,
    filter_code(opts.filter, "sluice.image.decode_crop"), norm_args, dst.data, err, ERR_SIZE))
  return dst
end

function M.cast(src, dst, layout)
  return M.normalize(src, dst, { scale = 1, layout = layout })
end

function M.encode_jpeg(src, opts)
  check_opts("encode_jpeg", opts)
  local quality = opts and opts.quality or 90
  if type(quality) ~= "number" or quality ~= math.floor(quality) or quality < 1 or quality > 100 then
    error("sluice.image.encode_jpeg: quality must be an integer in 1..100, not " .. tostring(quality), 2)
  end
  check(C.encode_jpeg(workspace(), describe(src, src_desc, "src"), quality, jpeg_out, jpeg_size, err, ERR_SIZE))
  return tensor.view("uint8", { tonumber(jpeg_size[0]) }, jpeg_out[0])
end

return M
