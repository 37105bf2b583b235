// float16 and bfloat16 conversions for fields of those dtypes.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "sluice/half.h"

using namespace sluice;

TEST_CASE("float16 encodes exact values, rounds, saturates to infinity", "[half]") {
  CHECK(float_to_half(0.0f) == 0x0000);
  CHECK(float_to_half(-0.0f) == 0x8000);
  CHECK(float_to_half(1.0f) == 0x3C00);
  CHECK(float_to_half(-2.0f) == 0xC000);
  CHECK(float_to_half(65504.0f) == 0x7BFF);
  CHECK(float_to_half(65520.0f) == 0x7C00);  // rounds past the largest half
  CHECK(float_to_half(std::numeric_limits<float>::infinity()) == 0x7C00);
  CHECK(float_to_half(5.9604645e-8f) == 0x0001);  // smallest subnormal
  CHECK(float_to_half(1e-9f) == 0x0000);
  CHECK(float_to_half(1.0f + 0x1.0p-11f) == 0x3C00);  // tie: to even
  CHECK(float_to_half(1.0f + 0x1.8p-11f) == 0x3C01);
  const std::uint16_t nan = float_to_half(std::numeric_limits<float>::quiet_NaN());
  CHECK((nan & 0x7C00) == 0x7C00);
  CHECK((nan & 0x03FF) != 0);
}

TEST_CASE("every float16 value survives a round trip through float", "[half]") {
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    const auto bits = static_cast<std::uint16_t>(h);
    const float f = half_to_float(bits);
    if (std::isnan(f)) continue;
    REQUIRE(float_to_half(f) == bits);
  }
}

TEST_CASE("bfloat16 rounds to nearest even and keeps NaN", "[half]") {
  CHECK(float_to_bfloat16(1.0f) == 0x3F80);
  CHECK(bfloat16_to_float(0x3F80) == 1.0f);
  CHECK(float_to_bfloat16(1.0f + 0x1.0p-8f) == 0x3F80);  // tie: to even
  CHECK(float_to_bfloat16(1.0f + 0x1.8p-8f) == 0x3F81);
  CHECK(std::isnan(bfloat16_to_float(float_to_bfloat16(std::numeric_limits<float>::quiet_NaN()))));
}

TEST_CASE("float16 rounds ties to even, at normal and subnormal magnitudes", "[half]") {
  CHECK(float_to_half(1.0f + 1.0f / 2048) == 0x3C00);  // tie: down to the even mantissa
  CHECK(float_to_half(1.0f + 3.0f / 2048) == 0x3C02);  // tie: up to the even mantissa
  CHECK(float_to_half(1.0f / 3.0f) == 0x3555);
  CHECK(float_to_half(6.1035156e-5f) == 0x0400);       // smallest normal
  CHECK(float_to_half(std::ldexp(1.0f, -24)) == 0x0001);  // smallest subnormal
  CHECK(float_to_half(std::ldexp(1.0f, -25)) == 0x0000);  // tie between 0 and it: to even
  CHECK(float_to_half(1e-9f) == 0x0000);
}
