-- sluice: the module a pipeline.lua requires to describe its input pipeline.
--
--   local sluice = require("sluice")
--   return sluice.pipeline {
--     source = sluice.range(50000),              -- or a data set: see Sources
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
-- Sources (paths are relative to pipeline.lua; `*`, `?`, `[...]` and `**` glob):
--   sluice.range(n [, make])                      the indices [0, n); the sample is i or make(i, ctx)
--   sluice.files{ "a.jpg", "b/*.jpg" }            whole files; or { dir = "train", match = "**/*.jpg" }
--   sluice.folders("train")                       ImageNet layout: train/CLASS/...; sample.label = class index
--   sluice.tfrecord{ "shards/*.tfrecord" }        one record per sample; index = true (default) or false
--   sluice.tar{ "shards/*.tar" }                  WebDataset: sample.fields.jpg, .cls, ... by extension
--   sluice.jsonl{ "corpus/*.jsonl.zst" }          JSON lines (plain, gzip, zstd): sample.bytes = the "text" value
--   sluice.npy{ "x.npy", "y.npy" }                rows along axis 0: sample.fields.x, sample.fields.y
--   sluice.npy{ { "d.npz", member = "x" } }       a .npz archive's member: sample.fields.x
--   sluice.parquet{ "t/*.parquet", columns = { "text", "label" } }  rows: sample.fields.text, ...
--   sluice.tokens{ "c.bin", dtype = "uint16", eos = 0 }   token files (flat or Megatron .bin/.idx):
--                                                 documents, windows, or packed rows with `pack`
--   sluice.mix{ { sluice.tokens{...}, weight = 0.7 }, ... }   token sources mixed by weight (with `pack`)
-- A record reaches map(sample, ctx) as (valid during that call only):
--   sample.bytes     uint8 tensor over the record (files, folders, tfrecord), or over
--                    the `field` string of a JSON line (jsonl): .data, .nbytes
--   sample.fields    name -> tensor: "data" for files and tfrecord, extensions for tar,
--                    the top-level keys and `field` for jsonl
--                    (uint8, read-only), array names for npy and column names for
--                    parquet (typed rows, read-only; parquet strings as uint8)
--   sample.index     the dataset index          sample.path    the file it came from
--   sample.label     class index (folders), -1 otherwise
--   sample.key       WebDataset key (tar)        sample.record  record/sample/row number in path
--   sample.offset    byte offset in path
-- sluice.example(sample) parses a tf.train.Example record; ex:floats("x"),
-- ex:int64s("y"), ex:bytes("img") give tensors in place, ex:read("x", ctx.out.x)
-- converts into a field (see sluice.example below); sluice.sequence_example
-- parses a tf.train.SequenceExample (context and feature_lists).
--
-- Reading: records are read ahead of map on each worker's own libuv loop
-- (`read_ahead` records, `io_threads` pool threads), for the batches the
-- worker holds and the next ones, so I/O overlaps the transforms. Data larger
-- than memory is fine: records are read into per-worker buffers, never whole
-- files (npy arrays are mapped; their pages are page cache).
--
-- Ordering and guarantees. Indexed sources (files, folders, tfrecord with
-- index = true, uncompressed tar, jsonl, npy, parquet) are random access: `shuffle = true`
-- shuffles globally across files and shards, every sample appears exactly
-- once per epoch, and batches are the same on every run and after a worker
-- crash. Streaming sources (tfrecord with index = false, gzip tar, or tar with
-- index = false) read shards front to back: each worker streams its own
-- partition of the shards (shard p goes to worker p % workers; workers beyond
-- the shard count are dropped at load, with a note), shuffled per pass when
-- shuffle_shards = true, and through a buffer of shuffle_buffer records; a
-- batch takes the next records of the stream of whichever worker fills it,
-- whatever its sample indices (so `shuffle` does not reorder records). An
-- epoch delivers dataset_size samples (given as size = N, or counted in one
-- pass at load); each worker's pass over its partition yields each of its
-- records once, but which records form an epoch, and which batch gets them,
-- depends on how the runtime spreads batches over workers: streaming is
-- neither exactly-once per epoch nor deterministic, nor repeatable after a
-- worker crash. Use index = true where those matter.
--
-- Bad records (missing file, truncated record, CRC mismatch, corrupt tar
-- header, bad npy header, malformed Example, malformed JSON line: named by
-- file and line) raise an error naming the file
-- and the byte offset or record; on_error (below) says whether it stops the
-- run or drops the sample. A length CRC mismatch or a truncated record found
-- while indexing or streaming loses the rest of its shard (noted at load).
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
local ffi = require("ffi")

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
  if p:sub(1, 1) == "/" or p:match("^%a[%w+.-]*://") then return p end  -- absolute, or a URL (s3://, https://)
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

-- Native sources: records read by sluice's C++ readers (runtime/io), ahead of
-- map, on each worker's own libuv loop. The launching process opens the data
-- set once (expands globs, loads or builds indexes, maps arrays); workers
-- share what it found. A spec table lists paths (relative to pipeline.lua;
-- `*`, `?`, `[...]` and a recursive `**` expand, sorted; WebDataset brace
-- ranges {000..127} and lists {a,b} expand in order) plus options. A path
-- may be remote: s3://bucket/key, https://host/path or http://, with brace
-- ranges (s3://b/train-{000000..000127}.tar) and, on S3, globs over the
-- listing; the objects are downloaded once per node into the cache
-- (SLUICE_CACHE_DIR) and read from there.
-- shown: values the signature shows for keys left out, as an earlier version
-- filled them in, so that the states it saved still resume.
local function native_source(kind, spec, paths, shown)
  local parts = { kind }
  for _, p in ipairs(paths) do parts[#parts + 1] = p end
  for _, key in ipairs({ "index", "index_dir", "verify_crc", "shuffle_shards", "shuffle_buffer", "size", "field",
                         "row_groups", "dtype", "eos", "vocab_size", "window" }) do
    local value = spec[key]
    if value == nil and shown ~= nil then value = shown[key] end
    if value ~= nil then parts[#parts + 1] = key .. "=" .. tostring(value) end
  end
  for _, list in ipairs({ spec.names or {}, spec.members or {}, spec.extensions or {} }) do
    for _, v in ipairs(list) do parts[#parts + 1] = v end
  end
  spec.kind, spec.paths = kind, paths
  return { kind = kind, native = true, spec = spec, signature = table.concat(parts, "\n") }
end

-- The string paths of spec[1..n] (or a lone string), relative to pipeline.lua.
local function path_list(fn, spec)
  if type(spec) == "string" then spec = { spec } end
  if type(spec) ~= "table" then fail(2, "%s: expected a path or a table {paths..., options}", fn) end
  local paths = {}
  for i = 1, #spec do
    if type(spec[i]) ~= "string" then fail(2, "%s: entry %d is a %s, not a path", fn, i, type(spec[i])) end
    paths[i] = M.path(spec[i])
  end
  return paths, spec
end

local function check_keys(fn, spec, allowed)
  for key in pairs(spec) do
    if type(key) ~= "number" and not allowed[key] then
      local names = {}
      for k in pairs(allowed) do names[#names + 1] = k end
      table.sort(names)
      fail(2, "%s: unknown option '%s' (options: %s)", fn, tostring(key), table.concat(names, ", "))
    end
  end
end

local function check_type(fn, spec, key, want)
  local v = spec[key]
  if v == nil then return end
  local ok = type(v) == want
  if want == "count" then ok = is_integer(v) and v >= 0 end
  if not ok then fail(2, "%s: %s must be %s, got %s", fn, key, want == "count" and "a non-negative integer"
    or ("a " .. want), tostring(v)) end
end

-- Streaming options shared by tfrecord and tar.
local STREAM_KEYS = { index = true, shuffle_shards = true, shuffle_buffer = true, size = true }
local function check_stream(fn, spec)
  check_type(fn, spec, "index", "boolean")
  check_type(fn, spec, "shuffle_shards", "boolean")
  check_type(fn, spec, "shuffle_buffer", "count")
  check_type(fn, spec, "size", "count")
end

-- Source: files, one sample each (the file's bytes: sample.bytes).
--   sluice.files{ "a.jpg", "more/*.jpg", "deep/**/*.png" }
--   sluice.files{ dir = "train", match = "**/*.jpg" }    (match: a glob below dir; default every file)
function M.files(spec)
  if type(spec) == "table" and spec.dir ~= nil then
    check_keys("sluice.files", spec, { dir = true, match = true })
    check_type("sluice.files", spec, "dir", "string")
    check_type("sluice.files", spec, "match", "string")
    return native_source("files", {}, { M.path(spec.dir) .. "/" .. (spec.match or "**/*") })
  end
  local paths = path_list("sluice.files", spec)
  if #paths == 0 then fail(1, "sluice.files: the list of files is empty") end
  if type(spec) == "table" then check_keys("sluice.files", spec, {}) end
  return native_source("files", {}, paths)
end

-- Source: an ImageNet-style tree ROOT/CLASS/.../FILE; sample.label is the
-- index of CLASS among ROOT's sorted sub-folders.
--   sluice.folders("train")   or   sluice.folders{ "train", extensions = { "jpg", "png" } }
function M.folders(spec)
  local paths
  paths, spec = path_list("sluice.folders", spec)
  if #paths ~= 1 then fail(1, "sluice.folders: expected one root folder, got %d paths", #paths) end
  check_keys("sluice.folders", spec, { extensions = true })
  local ext = {}
  if spec.extensions ~= nil then
    if type(spec.extensions) ~= "table" then fail(1, "sluice.folders: extensions must be an array of names") end
    for i, e in ipairs(spec.extensions) do ext[i] = tostring(e):lower():gsub("^%.", "") end
  end
  return native_source("folders", { extensions = ext }, paths)
end

-- Source: TFRecord shards; a sample is one record (sample.bytes).
--   sluice.tfrecord{ "shards/*.tfrecord" }                 index = true (default):
--     random access through sidecar indexes (FILE.idx, built and cached on first
--     open, or by `sluice index`; index_dir = "..." keeps them elsewhere), so
--     `shuffle = true` shuffles globally across shards.
--   sluice.tfrecord{ "shards/*.tfrecord", index = false, shuffle_buffer = 1024,
--                    shuffle_shards = true }               streaming (see below)
-- verify_crc = false skips the data CRC32C checks.
function M.tfrecord(spec)
  local paths
  paths, spec = path_list("sluice.tfrecord", spec)
  if #paths == 0 then fail(1, "sluice.tfrecord: no shard given") end
  check_keys("sluice.tfrecord", spec, { index = true, index_dir = true, verify_crc = true,
    shuffle_shards = true, shuffle_buffer = true, size = true })
  check_stream("sluice.tfrecord", spec)
  check_type("sluice.tfrecord", spec, "verify_crc", "boolean")
  check_type("sluice.tfrecord", spec, "index_dir", "string")
  local index = spec.index
  if index == nil then index = true end
  return native_source("tfrecord", { index = index, verify_crc = spec.verify_crc,
    index_dir = spec.index_dir and M.path(spec.index_dir) or nil, shuffle_shards = spec.shuffle_shards,
    shuffle_buffer = spec.shuffle_buffer, size = spec.size }, paths)
end

-- Source: WebDataset tar shards; members sharing a key ("a/b/0001.jpg",
-- "a/b/0001.cls") make one sample: sample.key = "a/b/0001", sample.fields.jpg,
-- sample.fields.cls. Plain tars are indexed (random access, global shuffle);
-- gzip-compressed ones (.tgz, .tar.gz) stream, as does index = false. Remote
-- plain tars with their index beside each (URL.idx, from `sluice index` or
-- `sluice write`) are fetched by the workers as the plan needs them.
--   sluice.tar{ "shards/*.tar" }    sluice.tar{ "shards/*.tgz", shuffle_buffer = 1000 }
function M.tar(spec)
  local paths
  paths, spec = path_list("sluice.tar", spec)
  if #paths == 0 then fail(1, "sluice.tar: no shard given") end
  check_keys("sluice.tar", spec, STREAM_KEYS)
  check_stream("sluice.tar", spec)
  return native_source("tar", { index = spec.index, shuffle_shards = spec.shuffle_shards,
    shuffle_buffer = spec.shuffle_buffer, size = spec.size }, paths)
end

-- Source: JSON lines, one object per line; plain, gzip or zstd (by content:
-- .jsonl, .jsonl.gz, .jsonl.zst). Random access through an offset index kept
-- in a sidecar (FILE.idx, or in index_dir); a compressed file is decompressed
-- once, at load, into FILE.plain beside it (or in index_dir) and read there.
--   sluice.jsonl{ "corpus/*.jsonl.gz" }                  sample.bytes = the "text" string's UTF-8 bytes
--   sluice.jsonl{ "c.jsonl", field = "meta.body" }       a nested key (or a top-level key "meta.body")
--   sluice.jsonl{ "labels.jsonl", field = false }        no text: the keys only, in sample.fields
-- Every line must hold `field`, a JSON string; every top-level key also reaches map as
-- sample.fields.KEY: a string's bytes, or any other value's JSON text. A
-- malformed line is an error naming the file and line (on_error = "skip"
-- drops it); a cut or corrupt compressed file stops at load (with skip: its
-- whole lines before the damage are kept, with a note).
function M.jsonl(spec)
  local paths
  paths, spec = path_list("sluice.jsonl", spec)
  if #paths == 0 then fail(1, "sluice.jsonl: no file given") end
  check_keys("sluice.jsonl", spec, { field = true, index_dir = true })
  if spec.field ~= false then check_type("sluice.jsonl", spec, "field", "string") end
  check_type("sluice.jsonl", spec, "index_dir", "string")
  if spec.field == "" then fail(1, "sluice.jsonl: field must name a key (field = false: the keys only)") end
  local field = spec.field
  if field == nil then field = "text" elseif field == false then field = "" end
  return native_source("jsonl", { field = field,
    index_dir = spec.index_dir and M.path(spec.index_dir) or nil }, paths)
end

-- Source: rows (along axis 0) of .npy arrays of equal length, memory-mapped.
-- Each array is a field of the sample, named after its file or its key:
--   sluice.npy{ "x.npy", "y.npy" }  -> sample.fields.x, sample.fields.y
--   sluice.npy{ image = "train_images.npy", label = "train_labels.npy" }
-- A member of a .npz archive (numpy.savez / savez_compressed) is an entry
-- { PATH, member = NAME }, named after the member or its key:
--   sluice.npy{ { "data.npz", member = "x" }, label = { "data.npz", member = "y" } }
-- Stored members stay mapped; deflated ones are inflated once, at load, in
-- the launching process (each CRC-32 is checked then).
-- A field is a read-only tensor of the array's dtype and row shape. Without a
-- map, the sample's fields are the pipeline's fields.
function M.npy(spec)
  if type(spec) ~= "table" then fail(1, "sluice.npy: expected a table of .npy paths") end
  local names, paths, members, seen = {}, {}, {}, {}
  local function add(name, p)
    local member = ""
    if type(p) == "table" then
      for k in pairs(p) do
        if k ~= 1 and k ~= "member" then fail(2, "sluice.npy: %s: bad key %s in { PATH, member = NAME }", tostring(name), tostring(k)) end
      end
      if type(p[1]) ~= "string" or type(p.member) ~= "string" or p.member == "" then
        fail(2, "sluice.npy: %s: a .npz member is { PATH, member = NAME }", tostring(name))
      end
      p, member = p[1], p.member
      if name == nil then name = member:gsub("%.npy$", "") end
    elseif type(p) ~= "string" then
      fail(2, "sluice.npy: %s is a %s, not a path", tostring(name), type(p))
    end
    if name == nil then name = (p:match("([^/]+)$") or p):gsub("%.npy$", "") end
    if seen[name] then fail(2, "sluice.npy: two arrays are named '%s'; name them: sluice.npy{ a = ..., b = ... }", name) end
    seen[name] = true
    names[#names + 1], paths[#paths + 1], members[#members + 1] = name, M.path(p), member
  end
  for i = 1, #spec do add(nil, spec[i]) end
  local keys = {}
  for k in pairs(spec) do
    if type(k) == "string" then keys[#keys + 1] = k
    elseif type(k) ~= "number" or k < 1 or k > #spec then fail(1, "sluice.npy: bad key %s", tostring(k)) end
  end
  table.sort(keys)
  for _, k in ipairs(keys) do add(k, spec[k]) end
  if #paths == 0 then fail(1, "sluice.npy: no array given") end
  return native_source("npy", { names = names, members = members }, paths)
end

-- Source: rows of Parquet tables (Spark, pandas, DuckDB, the Hugging Face
-- Hub), one sample per row, its columns by name in sample.fields:
--   sluice.parquet{ "train/*.parquet" }                       every column
--   sluice.parquet{ "a.parquet", "b.parquet", columns = { "text", "label" } }
-- Numeric columns are typed tensors (a row's value, shape {}; a list
-- column's elements, shape {n}; a null, shape {0}); strings and other byte
-- columns are uint8 tensors of their bytes. Without a map the sample's
-- fields are the pipeline's fields (fixed-size columns; strings into fields
-- declared { "name", "bytes", N }); undeclared, they come from the schema,
-- and a string or list column must be declared ({ "ids", "int64", { N } }),
-- a null going into a field is an error naming file, row and column (skip
-- drops it). Without columns the files must have the same columns. A row group is
-- decoded once per worker and kept while its rows are wanted (`row_groups`
-- of them per worker, default 2), so shuffled reads stay fast. See
-- runtime/io/include/sluice/io/parquet.h for the types, encodings and codecs
-- read, and what is refused by name.
function M.parquet(spec)
  local paths
  paths, spec = path_list("sluice.parquet", spec)
  if #paths == 0 then fail(1, "sluice.parquet: no file given") end
  check_keys("sluice.parquet", spec, { columns = true, row_groups = true })
  local columns = {}
  if spec.columns ~= nil then
    if type(spec.columns) ~= "table" then fail(1, "sluice.parquet: columns must be a list of column names") end
    local seen = {}
    for i, c in ipairs(spec.columns) do
      if type(c) ~= "string" or c == "" then fail(1, "sluice.parquet: columns[%d] is not a column name", i) end
      if seen[c] then fail(1, "sluice.parquet: columns[%d] is '%s' again (columns[%d]): each column is one field", i, c, seen[c]) end
      seen[c] = i
      columns[i] = c
    end
    if #columns == 0 then fail(1, "sluice.parquet: columns is empty") end
  end
  if spec.row_groups ~= nil and (not is_integer(spec.row_groups) or spec.row_groups < 1 or spec.row_groups > 1024) then
    fail(1, "sluice.parquet: row_groups must be an integer in [1, 1024], got %s", tostring(spec.row_groups))
  end
  return native_source("parquet", { names = columns, row_groups = spec.row_groups }, paths)
end

-- Source: token files for language-model pretraining (see also `pack` and
-- sluice.mix). A flat file of uint16 or uint32 token ids (nanoGPT's train.bin),
-- split into documents after each `eos` token; or a Megatron-LM indexed dataset
-- (PREFIX.bin + PREFIX.idx; give the prefix or either file), whose sequences
-- are the documents. Files are memory-mapped.
--   sluice.tokens{ "corpus.bin", dtype = "uint16", eos = 0 }
--   sluice.tokens{ "shards/*.bin", dtype = "uint32", eos = 50256, vocab_size = 50257 }
-- vocab_size (optional) checks every id at load. Without `pack` a sample is a
-- document: sample.fields.tokens (read-only, uint16/uint32, its length), for a
-- map to turn into fields; with window = N it is a window of N + 1 tokens of
-- the documents concatenated (nanoGPT's x = w[0, N), y = w[1, N]), windows
-- r * N apart: tokens int64[N + 1], a field without a map. With `pack` a
-- sample is a packed row.
--
-- Text instead of token files: text = an indexed source (sluice.files,
-- .folders, .tfrecord, .tar: each record's bytes are a document), tokenizer =
-- sluice.sentencepiece(model); the launching process tokenizes every document
-- once at load, eos (default: the model's) after each, and the ids are then a
-- corpus like a token file's:
--   sluice.tokens{ text = sluice.files{ "books/*.txt" }, tokenizer = sluice.sentencepiece("m.model") }
function M.tokens(spec)
  local paths
  paths, spec = path_list("sluice.tokens", spec)
  check_keys("sluice.tokens", spec, { dtype = true, eos = true, vocab_size = true, window = true, text = true,
    tokenizer = true })
  if spec.window ~= nil and not (is_integer(spec.window) and spec.window > 0 and spec.window < 2^31) then
    fail(1, "sluice.tokens: window must be a positive integer, got %s", tostring(spec.window))
  end
  if spec.text ~= nil or spec.tokenizer ~= nil then
    local text, tok = spec.text, spec.tokenizer
    if type(text) ~= "table" or not text.native or text.kind == "tokens" or text.kind == "mix" or text.kind == "npy" then
      fail(1, "sluice.tokens: text must be a source of text records (sluice.files, .folders, .tfrecord, .tar, .jsonl, .parquet)")
    end
    if type(tok) ~= "table" or type(tok.path) ~= "string" or tok.vocab_size == nil then
      fail(1, "sluice.tokens: text needs tokenizer = sluice.sentencepiece(model)")
    end
    if #paths > 0 then fail(1, "sluice.tokens: give token files or text, not both") end
    local eos = spec.eos
    if eos == nil then eos = tok.eos_id end
    if not (is_integer(eos) and eos >= 0) then
      fail(1, "sluice.tokens: the model %s has no eos id; give eos = ID", tok.path)
    end
    local source = native_source("tokens", { text = text.spec, tokenizer = tok.path, eos = eos, dtype = "uint32",
      window = spec.window }, {})
    source.signature = source.signature .. "\ntext\n" .. text.signature .. "\ntokenizer=" .. tok.path
    return source
  end
  if #paths == 0 then fail(1, "sluice.tokens: no token file given") end
  -- No default: a flat file does not say how wide its ids are (the native
  -- source refuses one without dtype); a Megatron index does.
  local dtype = spec.dtype
  if dtype ~= nil and dtype ~= "uint16" and dtype ~= "uint32" and dtype ~= "int32" then
    fail(1, 'sluice.tokens: dtype must be "uint16" or "uint32" ("int32", Megatron\'s name, reads as uint32), got %s',
      tostring(spec.dtype))
  end
  if spec.eos ~= nil and not (is_integer(spec.eos) and spec.eos >= 0 and spec.eos < (dtype == "uint16" and 2^16 or 2^32)) then
    fail(1, "sluice.tokens: eos must be a token id of dtype %s, got %s", dtype or "uint32", tostring(spec.eos))
  end
  check_type("sluice.tokens", spec, "vocab_size", "count")
  if dtype == "int32" then dtype = "uint32" end
  return native_source("tokens", { dtype = dtype, eos = spec.eos, vocab_size = spec.vocab_size, window = spec.window },
    paths, { dtype = "uint16" })
end

-- Source: token sources mixed by weight (each a sluice.tokens), for a pipeline
-- with `pack`: every row comes from one source, on a fixed schedule that gives
-- each source its exact share of every period of rows (see
-- sluice/text/mixing.h). A small source repeats, a large one is cut, each
-- over its own epochs; size = rows per epoch of the mixture (default: the
-- sources' rows summed).
--   sluice.mix{ { sluice.tokens{ "web.bin", dtype = "uint16", eos = 0 }, weight = 0.7 },
--               { sluice.tokens{ "code.bin", dtype = "uint16", eos = 0 }, weight = 0.3 } }
-- New weights from a global row on (epoch * rows per epoch + row; a resumed
-- run adds a phase where it resumes, the rows before it stay as they were):
--   phases = { { from_row = 120000, weights = { 0.5, 0.5 } } }
function M.mix(spec)
  if type(spec) ~= "table" or #spec == 0 then
    fail(1, "sluice.mix: expected a table of { source, weight = w } entries")
  end
  check_keys("sluice.mix", spec, { size = true, phases = true })
  check_type("sluice.mix", spec, "size", "count")
  if spec.size == 0 then
    fail(1, "sluice.mix: size must be at least 1 row (leave it out for the sources' rows summed)")
  end
  local parts, signature = {}, { "mix", tostring(spec.size) }
  local phases = {}
  if spec.phases ~= nil then
    if type(spec.phases) ~= "table" then fail(1, "sluice.mix: phases must be a list of { from_row = n, weights = {...} }") end
    for i, phase in ipairs(spec.phases) do
      if type(phase) ~= "table" or not (is_integer(phase.from_row) and phase.from_row > 0)
        or type(phase.weights) ~= "table" or #phase.weights ~= #spec then
        fail(1, "sluice.mix: phase %d must be { from_row = n > 0, weights = { %d numbers } }", i, #spec)
      end
      local weights = {}
      for k, w in ipairs(phase.weights) do
        if type(w) ~= "number" or not (w > 0) or w == math.huge then
          fail(1, "sluice.mix: phase %d: weight %d must be a positive number, got %s", i, k, tostring(w))
        end
        weights[k] = w
        signature[#signature + 1] = string.format("phase %d %.17g", phase.from_row, w)
      end
      phases[i] = { from_row = phase.from_row, weights = weights }
    end
  end
  for i, entry in ipairs(spec) do
    if type(entry) ~= "table" or type(entry[1]) ~= "table" or entry[1].kind ~= "tokens" then
      fail(1, "sluice.mix: entry %d must be { sluice.tokens{...}, weight = w }", i)
    end
    for key in pairs(entry) do
      if key ~= 1 and key ~= "weight" then fail(1, "sluice.mix: entry %d: unknown option '%s'", i, tostring(key)) end
    end
    local w = entry.weight
    if type(w) ~= "number" or not (w > 0) or w == math.huge then
      fail(1, "sluice.mix: entry %d: weight must be a positive number, got %s", i, tostring(w))
    end
    local part = {}
    for k, v in pairs(entry[1].spec) do part[k] = v end
    part.weight = w
    parts[i] = part
    signature[#signature + 1] = entry[1].signature .. "\nweight=" .. string.format("%.17g", w)
  end
  return { kind = "mix", native = true, spec = { kind = "mix", paths = {}, parts = parts, size = spec.size, phases = phases },
    signature = table.concat(signature, "\n--\n") }
end

-- A SentencePiece tokenizer (see sluice.text): tok:encode(bytes) gives the
-- ids as an int32 tensor, in whichever worker runs the map.
--   local tok = sluice.sentencepiece("m.model")
function M.sentencepiece(path)
  if type(path) ~= "string" then fail(1, "sluice.sentencepiece: expected the path of a .model file, got a %s", type(path)) end
  return require("sluice.text").sentencepiece(M.path(path), 2)
end

-- tf.train.Example, decoded in C++ (sluice/io/example.h). sluice.example(x) parses x (a
-- sample: its bytes; or a uint8 tensor) and returns the parsed Example, which
-- stays valid until the next sluice.example or sluice.sequence_example call in
-- this process:
--   ex:floats(name)  float32 tensor over the float_list, in place (read-only)
--   ex:int64s(name)  int64 tensor over the int64_list, in place (read-only)
--   ex:bytes(name [, i])  uint8 tensor over entry i (1-based, default 1) of a bytes_list
--   ex:read(name, t) converts a numeric list into tensor t (any numeric dtype,
--                    as many elements as the list) and returns t: e.g. ctx.out.x
--   ex:count(name)   values in the list (0 when absent)
--   ex:kind(name)    "float_list", "int64_list", "bytes_list" or nil
-- A tf.train.SequenceExample record is refused by sluice.example (its
-- feature_lists would be lost); sluice.sequence_example(x) parses one:
--   seq.context      an Example over the context features (the methods above)
--   seq:steps(name)  steps in the feature_list name (0 when absent)
--   seq:step(t)      an Example over step t (1-based) of every feature_list:
--                    seq:step(t):floats("x_seq") is that step's float_list
-- Errors name the feature (and step), and the file and record when x is a sample.
local Example = {}
Example.__index = Example
local KINDS = { "bytes_list", "float_list", "int64_list" }
local example_out = ffi.new("const void*[1]")
local example_size = ffi.new("uint64_t[1]")
local example_kind = ffi.new("int32_t[1]")
local parsed  -- the one parsed handle of this process: { handle, path, record, offset }

local function example_fail(ex)
  local src = ex.source
  local where = src.path and string.format("%s record %d (byte %d): ", src.path, src.record, src.offset) or ""
  error(where .. ffi.string(native.api.example_error(src.handle)), 3)
end

-- Parses x into the process's one handle; an Example view over its features.
local function parse(fn, x, sequence)
  local bytes = x
  if type(x) == "table" and not tensor.is_tensor(x) then bytes = x.bytes end
  if not tensor.is_tensor(bytes) then
    error(fn .. ": expected a sample with bytes or a uint8 tensor, got " .. type(bytes), 3)
  end
  if parsed == nil then
    local handle = native.api.example_new()
    if handle == nil then error(fn .. ": out of memory", 3) end
    parsed = { handle = ffi.gc(handle, native.api.example_free) }
    parsed.features = setmetatable({ source = parsed, handle = parsed.handle, step = -1 }, Example)
  end
  if bytes == x then parsed.path = nil else parsed.path, parsed.record, parsed.offset = x.path, x.record, x.offset end
  if native.api.example_parse(parsed.handle, bytes.data, bytes.nbytes, sequence) ~= 0 then
    example_fail(parsed.features)
  end
  return parsed.features
end

function M.example(x) return parse("sluice.example", x, 0) end

local SequenceExample = {}
SequenceExample.__index = SequenceExample

function M.sequence_example(x)
  local context = parse("sluice.sequence_example", x, 1)
  parsed.sequence = parsed.sequence or setmetatable({ context = context, views = {} }, SequenceExample)
  return parsed.sequence
end

function SequenceExample:steps(name)
  local ex = self.context
  if native.api.example_steps(ex.handle, name, example_size) ~= 0 then example_fail(ex) end
  return tonumber(example_size[0])
end

function SequenceExample:step(t)
  if type(t) ~= "number" or t < 1 then error("seq:step: expected a step number from 1", 2) end
  local view = self.views[t]
  if view == nil then
    view = setmetatable({ source = self.context.source, handle = self.context.handle, step = t - 1 }, Example)
    self.views[t] = view
  end
  return view
end

function Example:kind(name)
  if native.api.example_info(self.handle, name, self.step, example_kind, example_size) ~= 0 then example_fail(self) end
  return KINDS[example_kind[0]]
end

function Example:count(name)
  if native.api.example_info(self.handle, name, self.step, example_kind, example_size) ~= 0 then example_fail(self) end
  return tonumber(example_size[0])
end

local function values(self, name, kind, dtype)
  local api = native.api
  if api.example_info(self.handle, name, self.step, example_kind, example_size) ~= 0 then example_fail(self) end
  if api.example_values(self.handle, name, self.step, kind, example_out) ~= 0 then example_fail(self) end
  return tensor.view(dtype, { tonumber(example_size[0]) }, example_out[0])
end

function Example:floats(name) return values(self, name, 2, "float32") end
function Example:int64s(name) return values(self, name, 3, "int64") end

function Example:bytes(name, i)
  i = i or 1
  if native.api.example_bytes(self.handle, name, self.step, i - 1, example_out, example_size) ~= 0 then
    example_fail(self)
  end
  return tensor.view("uint8", { tonumber(example_size[0]) }, example_out[0])
end

function Example:read(name, t)
  if not tensor.is_tensor(t) then error("ex:read: the second argument must be a tensor", 2) end
  local dt = tensor.dtype(t.dtype)
  if native.api.example_copy(self.handle, name, self.step, dt.code, t.data, t.nbytes) ~= 0 then example_fail(self) end
  return t
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

-- What sluice.pipeline takes: the pipeline's own parts, then the run settings a
-- pipeline.lua may set (the table of sluice/settings.h; settings_test checks
-- that these are its pipeline settings).
local OPTION_NAMES = {
  "source", "map", "map_batch", "fields", "read_ahead", "io_threads", "pack",
  "batch_size", "drop_last", "shuffle", "shuffle_window", "seed", "workers", "prefetch", "memory_budget_mb",
  "ordered", "epochs", "device", "on_error", "skip_fill",
}
local PARTS = { source = true, map = true, map_batch = true, fields = true, read_ahead = true, io_threads = true,
  pack = true }
local OPTIONS = {}  -- name -> "part" (the pipeline's own) or "setting" (a run setting)
for _, name in ipairs(OPTION_NAMES) do OPTIONS[name] = PARTS[name] and "part" or "setting" end
local OPTION_LIST = table.concat(OPTION_NAMES, ", ")

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
    if e.dtype == "bytes" then  -- variable length: { "jpg", "bytes", MAX_BYTES } (sluice/options.h)
      local shape = tensor.check_shape(e.shape)
      if not shape or #shape ~= 1 or shape[1] < 1 then
        fail(2, "field '%s' is bytes: declare the most bytes a sample may hold, { \"%s\", \"bytes\", N }",
          e.name, e.name)
      end
      entries[i] = { name = e.name, dtype = tensor.dtype("uint8"), shape = { 8 + shape[1] }, bytes = shape[1] }
    else
      local dt = tensor.dtype(e.dtype)
      if not dt then
        fail(2, "field '%s': unknown dtype %s (one of %s, or bytes)", e.name, tostring(e.dtype), tensor.DTYPE_NAMES)
      end
      local shape, why = tensor.check_shape(e.shape)
      if not shape then fail(2, "field '%s': %s", e.name, why) end
      entries[i] = { name = e.name, dtype = dt, shape = shape }
    end
  end
  return entries
end

-- The pipeline: what pipeline.lua returns. Every option but source has a default:
--   source      sluice.range, .files, .folders, .tfrecord, .tar, .jsonl, .npy, .parquet   (required)
--   map         function(sample, ctx) -> {field = value, ...}; default: the sample
--               (required for files, folders, tfrecord, tar and jsonl)
--   map_batch   function(batch, ctx), in place on the whole batch       (optional)
--   fields      declared fields; default: inferred from sample 0 (sluice.parquet
--               without a map: from the schema)
--   batch_size  1          drop_last  false     shuffle  false     seed  0
--   shuffle_window  0: with shuffle, k > 0 shuffles the source's shards (tfrecord,
--               tar, jsonl files) per epoch and samples only within windows of k
--               shards: a node reads k shards at a time (sluice/shard_shuffle.h)
--   epochs      1 (0 = until stopped)           workers  2
--   workers     "auto": start with the cores, add workers at run time while
--               throughput rises and the CPUs are not saturated
--   prefetch    batch slots in flight; 0 or "auto" = runtime default (2 * workers + 2,
--               with auto workers 2 per worker it may grow to, within memory_budget_mb)
--   memory_budget_mb  1024: the arena's slots with auto workers
--   ordered     true: deliver in plan order; false: as batches complete
--   device      "cpu" | "auto" (cpu for now) | "cuda" (not supported yet)
--   on_error    "fail": a bad record or a failing map stops the run with an error
--               naming the sample (and the file and byte offset or record);
--               "skip": that sample is dropped from its batch and every later
--               epoch, and reported (ids and reasons) when the run ends; a
--               failing sample 0 is tried past (up to 16 samples) at load
--   skip_fill   "shrink": a batch that lost samples to on_error = "skip" is
--               shorter; "repeat": it keeps batch_size samples by repeating
--               its surviving samples in order (fixed shapes for compiled models)
--   pack        token sources (sluice.tokens, sluice.mix): { seq_len = n, mode = "concat" |
--               "best_fit", window = 64 }; samples become packed rows whose fields
--               (tokens, targets, segment_ids, positions, loss_mask) need no map
--   read_ahead  64: records read ahead of the sample being made, per worker
--   io_threads  4: libuv thread-pool threads per worker (whole-file reads)
function M.pipeline(spec)
  if type(spec) ~= "table" then fail(1, "sluice.pipeline expects a table of options, got a %s", type(spec)) end
  for key in pairs(spec) do
    if not OPTIONS[key] then
      local elsewhere = type(key) == "string" and native.api.setting_elsewhere(key) or nil
      if elsewhere ~= nil then
        fail(1, "sluice.pipeline: unknown option '%s': %s", key, ffi.string(elsewhere))
      end
      fail(1, "sluice.pipeline: unknown option '%s' (options: %s)", tostring(key), OPTION_LIST)
    end
  end
  local p = setmetatable({}, Pipeline)
  local source = spec.source
  if type(source) ~= "table" or (source.kind ~= "range" and not source.native) then
    fail(1, "sluice.pipeline: source must be sluice.range(n, fn), sluice.files{...}, sluice.folders(...), "
      .. "sluice.tfrecord{...}, sluice.tar{...}, sluice.jsonl{...}, sluice.npy{...}, sluice.parquet{...}, "
      .. "sluice.tokens{...} or sluice.mix{...}")
  end
  if spec.pack ~= nil then
    local pack = spec.pack
    if source.kind ~= "tokens" and source.kind ~= "mix" then
      fail(1, "sluice.pipeline: pack needs a token source (sluice.tokens or sluice.mix), not sluice.%s", source.kind)
    end
    if type(pack) ~= "table" then fail(1, "sluice.pipeline: pack must be a table { seq_len = n, mode = ..., window = n }") end
    for key in pairs(pack) do
      if key ~= "seq_len" and key ~= "mode" and key ~= "window" then
        fail(1, "sluice.pipeline: pack: unknown option '%s' (options: mode, seq_len, window)", tostring(key))
      end
    end
    if not (is_integer(pack.seq_len) and pack.seq_len > 0 and pack.seq_len < 2^31) then
      fail(1, "sluice.pipeline: pack.seq_len must be a positive integer, got %s", tostring(pack.seq_len))
    end
    local mode = pack.mode or "concat"
    if mode ~= "concat" and mode ~= "best_fit" then
      fail(1, 'sluice.pipeline: pack.mode must be "concat" or "best_fit", got %s', tostring(pack.mode))
    end
    local window = pack.window or 64
    if not (is_integer(window) and window > 0 and window < 2^32) then
      fail(1, "sluice.pipeline: pack.window must be a positive integer, got %s", tostring(pack.window))
    end
    p.pack = { seq_len = pack.seq_len, mode = mode, window = window }
  elseif source.kind == "mix" then
    fail(1, "sluice.pipeline: sluice.mix mixes packed rows; add pack = { seq_len = n }")
  end
  local windows = source.native and source.spec.window ~= nil
  if p.pack and windows then
    fail(1, "sluice.pipeline: sluice.tokens{ window = ... } gives windows; leave out pack, or window")
  end
  if source.native and source.kind ~= "npy" and source.kind ~= "parquet" and spec.map == nil and p.pack == nil and not windows then
    if source.kind == "tokens" then
      fail(1, "sluice.pipeline: sluice.tokens gives documents of varying length (sample.fields.tokens); "
        .. "add pack = { seq_len = n } for fixed rows, window = n for nanoGPT windows, or a map that "
        .. "turns a document into fields")
    end
    fail(1, "sluice.pipeline: sluice.%s gives records of bytes; add map = function(sample, ctx) that "
      .. "turns one into fields", source.kind)
  end
  p.source = source
  -- A run setting's value is checked by the table of settings first, so that
  -- a bad one gets the words every other surface gives (sluice/settings.h);
  -- then for its Lua type. device is the pipeline's own: it may ask for cuda.
  local function option(key, check, default, what)
    local v = spec[key]
    if v == nil then return default end
    local kind = type(v)
    if key ~= "device" and OPTIONS[key] == "setting" and (kind == "number" or kind == "string" or kind == "boolean") then
      local err = native.api.setting_error(key, tostring(v))
      if err ~= nil then fail(2, "sluice.pipeline: %s", ffi.string(err)) end
    end
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
  p.shuffle_window = option("shuffle_window", count, 0, "a non-negative integer")
  p.seed = option("seed", function(v) return is_integer(v) and v >= 0 end, 0, "an integer in [0, 2^53)")
  p.epochs = option("epochs", count, 1, "a non-negative integer")
  local function or_auto(check) return function(v) return v == "auto" or check(v) end end
  p.workers = option("workers", or_auto(positive), 2, 'a positive integer or "auto"')
  p.prefetch = option("prefetch", or_auto(count), 0, 'a non-negative integer or "auto"')
  p.memory_budget_mb = option("memory_budget_mb", positive, 1024, "a positive integer")
  p.ordered = option("ordered", boolean, true, "true or false")
  p.on_error = option("on_error", function(v) return v == "fail" or v == "skip" end, "fail", '"fail" or "skip"')
  p.skip_fill = option("skip_fill", function(v) return v == "shrink" or v == "repeat" end, "shrink",
    '"shrink" or "repeat"')
  p.read_ahead = option("read_ahead", positive, 64, "a positive integer")
  p.io_threads = option("io_threads", function(v) return positive(v) and v <= 1024 end, 4,
    "an integer in [1, 1024]")
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
