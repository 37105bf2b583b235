// sluice/half.h: float16 (IEEE binary16) and bfloat16 conversions, as bits,
// for fields of those dtypes (C++ has no portable type for them, LuaJIT sees
// them as uint16_t). One implementation for the Lua front end, the image ops
// and the CUDA stage's host reference.
//
// Thread safety: pure functions.
#pragma once

#include "sluice/export.h"

#include <cstdint>

namespace sluice {

// Round to nearest even; overflow gives infinity, NaN stays NaN.
SLUICE_API std::uint16_t float_to_half(float x);
SLUICE_API float half_to_float(std::uint16_t h);
SLUICE_API std::uint16_t float_to_bfloat16(float x);
SLUICE_API float bfloat16_to_float(std::uint16_t b);

}  // namespace sluice
