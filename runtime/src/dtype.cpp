#include "sluice/dtype.h"

#include "sluice/dlpack.h"

#include <array>

namespace sluice {
namespace {

struct DTypeInfo {
  DType type;
  std::size_t size;
  std::string_view name;
  std::string_view short_name;
};

constexpr std::array<DTypeInfo, 13> kTypes{{
    {DType::u8, 1, "uint8", "u8"},       {DType::i8, 1, "int8", "i8"},
    {DType::u16, 2, "uint16", "u16"},    {DType::i16, 2, "int16", "i16"},
    {DType::u32, 4, "uint32", "u32"},    {DType::i32, 4, "int32", "i32"},
    {DType::u64, 8, "uint64", "u64"},    {DType::i64, 8, "int64", "i64"},
    {DType::f16, 2, "float16", "f16"},   {DType::bf16, 2, "bfloat16", "bf16"},
    {DType::f32, 4, "float32", "f32"},   {DType::f64, 8, "float64", "f64"},
    {DType::boolean, 1, "bool", "b8"},
}};

const DTypeInfo& info(DType t) { return kTypes[static_cast<std::size_t>(t)]; }

}  // namespace

std::size_t dtype_size(DType t) { return info(t).size; }

std::string_view dtype_name(DType t) { return info(t).name; }

std::optional<DType> parse_dtype(std::string_view name) {
  for (const DTypeInfo& i : kTypes) {
    if (name == i.name || name == i.short_name) return i.type;
  }
  if (name == "float" ) return DType::f32;
  if (name == "double") return DType::f64;
  if (name == "half") return DType::f16;
  return std::nullopt;
}

DLDataType to_dlpack_dtype(DType t) {
  const auto bits = static_cast<std::uint8_t>(dtype_size(t) * 8);
  switch (t) {
    case DType::i8: case DType::i16: case DType::i32: case DType::i64:
      return {kDLInt, bits, 1};
    case DType::f16: case DType::f32: case DType::f64:
      return {kDLFloat, bits, 1};
    case DType::bf16:
      return {kDLBfloat, bits, 1};
    default:  // unsigned integers, and bool
      return {kDLUInt, bits, 1};
  }
}

}  // namespace sluice
