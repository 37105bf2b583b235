// half.h: float16 (IEEE binary16) and bfloat16 conversions for fields of those
// dtypes, which LuaJIT has no C type for (Lua sees them as uint16_t bits).
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>

namespace sluice::scripting {

// Round to nearest even; overflow gives infinity, NaN stays NaN.
std::uint16_t float_to_half(float x);
float half_to_float(std::uint16_t h);
std::uint16_t float_to_bfloat16(float x);
float bfloat16_to_float(std::uint16_t b);

}  // namespace sluice::scripting
