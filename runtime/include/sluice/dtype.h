// sluice/dtype.h: element types of batch fields.
//
// Thread safety: everything here is a pure function.
#pragma once

#include "sluice/export.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace sluice {

enum class DType : std::uint8_t {
  u8, i8, u16, i16, u32, i32, u64, i64, f16, bf16, f32, f64, boolean,
};

// Bytes per element.
SLUICE_API std::size_t dtype_size(DType t);

// Canonical lower-case name: "uint8", "int32", "float16", "bool", ...
SLUICE_API std::string_view dtype_name(DType t);

// Inverse of dtype_name; also accepts short names ("u8", "f32", "i64").
SLUICE_API std::optional<DType> parse_dtype(std::string_view name);

}  // namespace sluice
