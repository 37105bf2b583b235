#include "text_api.h"

#include <lua.hpp>

#include <algorithm>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "sluice/text/tokenizer.h"

namespace sluice::scripting {
namespace {

struct Model {
  std::shared_ptr<const text::SentencePiece> sp;
  std::vector<std::int32_t> ids;
};

void put_error(const char* what, char* err, std::uint64_t err_size) noexcept {
  if (err == nullptr || err_size == 0) return;
  const std::size_t n = std::min<std::size_t>(std::strlen(what), err_size - 1);
  std::memcpy(err, what, n);
  err[n] = '\0';
}

void* sp_open(const char* path, char* err, std::uint64_t err_size) noexcept {
  try {
    auto model = std::make_unique<Model>();
    model->sp = text::SentencePiece::open(path);
    return model.release();
  } catch (const std::exception& e) {
    put_error(e.what(), err, err_size);
  }
  return nullptr;
}

void sp_free(void* model) noexcept { delete static_cast<Model*>(model); }

int sp_encode(void* handle, const void* data, std::uint64_t size, const std::int32_t** ids, std::uint64_t* count,
              char* err, std::uint64_t err_size) noexcept {
  auto* model = static_cast<Model*>(handle);
  try {
    model->sp->encode(std::string_view(static_cast<const char*>(data), size), &model->ids);
    *ids = model->ids.data();
    *count = model->ids.size();
    return 0;
  } catch (const std::exception& e) {
    put_error((model->sp->path() + ": " + e.what()).c_str(), err, err_size);
  }
  return -1;
}

std::int32_t sp_info(void* handle, std::int32_t what) noexcept {
  const auto& sp = *static_cast<Model*>(handle)->sp;
  switch (what) {
    case 0: return static_cast<std::int32_t>(sp.vocab_size());
    case 1: return sp.bos_id();
    case 2: return sp.eos_id();
    case 3: return sp.pad_id();
    case 4: return sp.unk_id();
  }
  return -1;
}

const char* sp_encoder(void* handle) noexcept { return static_cast<Model*>(handle)->sp->encoder().c_str(); }

constexpr sluice_text_api kApi = {sp_open, sp_free, sp_encode, sp_info, sp_encoder};

}  // namespace

const sluice_text_api& text_api() { return kApi; }

void open_text_api(lua_State* L) {
  lua_getglobal(L, "require");
  lua_pushstring(L, "sluice.text");
  lua_call(L, 1, 1);
  lua_getfield(L, -1, "init");
  lua_pushlightuserdata(L, const_cast<sluice_text_api*>(&text_api()));
  lua_pushinteger(L, static_cast<lua_Integer>(sizeof(sluice_text_api)));
  lua_call(L, 2, 0);
  lua_pop(L, 1);
}

}  // namespace sluice::scripting
