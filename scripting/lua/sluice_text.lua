-- sluice.text: tokenizers for pipelines, over the C functions of
-- scripting/src/text_api.h (sluice::text, runtime/text).
--
--   local tok = sluice.sentencepiece("m.model")   -- loaded in every process that runs the script
--   map = function(s, ctx)
--     local ids = tok:encode(s.bytes)             -- int32 tensor [n], valid until tok's next encode
--     ...
--   end
--
-- The ids equal python3-sentencepiece's SentencePieceProcessor.encode(text)
-- for the same model and UTF-8 text (unigram and BPE models, byte fallback).
-- tok.vocab_size, tok.bos_id, tok.eos_id, tok.pad_id, tok.unk_id (-1: none);
-- tok.encoder: "sluice unigram" (unigram models: Sluice's own encoder, the
-- same ids) or "libsentencepiece" with the reason.
local ffi = require("ffi")
local tensor = require("sluice.tensor")

ffi.cdef[[
typedef struct sluice_text_api {
  void* (*sp_open)(const char* path, char* err, uint64_t err_size);
  void (*sp_free)(void* model);
  int (*sp_encode)(void* model, const void* data, uint64_t size, const int32_t** ids, uint64_t* count,
                   char* err, uint64_t err_size);
  int32_t (*sp_info)(void* model, int32_t what);
  const char* (*sp_encoder)(void* model);
} sluice_text_api;
]]

local M = {}
local C
local ERR_SIZE = 1024
local err = ffi.new("char[?]", ERR_SIZE)
local ids_out = ffi.new("const int32_t*[1]")
local count_out = ffi.new("uint64_t[1]")

-- Called by the host (scripting/src/text_api.cpp) while it sets the state up.
function M.init(api_pointer, api_size)
  if ffi.sizeof("sluice_text_api") ~= api_size then
    error("sluice.text: sluice_text_api layout differs between C++ and Lua", 0)
  end
  C = ffi.cast("const sluice_text_api*", api_pointer)
end

local SentencePiece = {}
SentencePiece.__index = SentencePiece

-- path: already resolved against the pipeline's directory (sluice.sentencepiece does it).
function M.sentencepiece(path, level)
  if type(path) ~= "string" then error("sluice.sentencepiece: expected the path of a .model file", (level or 1) + 1) end
  local handle = C.sp_open(path, err, ERR_SIZE)
  if handle == nil then error(ffi.string(err), (level or 1) + 1) end
  local tok = setmetatable({ handle = ffi.gc(handle, C.sp_free), path = path }, SentencePiece)
  tok.vocab_size, tok.bos_id, tok.eos_id = C.sp_info(handle, 0), C.sp_info(handle, 1), C.sp_info(handle, 2)
  tok.pad_id, tok.unk_id = C.sp_info(handle, 3), C.sp_info(handle, 4)
  tok.encoder = ffi.string(C.sp_encoder(handle))
  return tok
end

-- x: a Lua string, a uint8 tensor, or a sample with .bytes.
function SentencePiece:encode(x)
  local data, size
  if type(x) == "string" then
    data, size = x, #x
  else
    local bytes = x
    if type(x) == "table" and not tensor.is_tensor(x) then bytes = x.bytes end
    if not tensor.is_tensor(bytes) then
      error("tok:encode: expected a string, a uint8 tensor or a sample with bytes, got " .. type(bytes), 2)
    end
    data, size = bytes.data, bytes.nbytes
  end
  if C.sp_encode(self.handle, data, size, ids_out, count_out, err, ERR_SIZE) ~= 0 then error(ffi.string(err), 2) end
  return tensor.view("int32", { tonumber(count_out[0]) }, ids_out[0])
end

return M
