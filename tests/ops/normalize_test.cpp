#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "sluice/error.h"
#include "sluice/half.h"
#include "sluice/ops/normalize.h"

using namespace sluice::ops;

TEST_CASE("normalize writes CHW float32 with mean and std, mirrored on request") {
  // 2x3 RGB: pixel (x, y) = (10x + y, 100, 255)
  std::vector<std::uint8_t> bytes;
  for (int y = 0; y < 2; ++y) {
    for (int x = 0; x < 3; ++x) bytes.insert(bytes.end(), {static_cast<std::uint8_t>(10 * x + y), 100, 255});
  }
  const Image src = packed_image(bytes.data(), 2, 3, 3);
  std::vector<float> out(18);
  normalize(src, out.data(), {.mean = {0.5f, 0.5f, 0.5f, 0}, .std = {0.25f, 0.5f, 1, 1}});
  CHECK(out[0] == Approx((0 / 255.0 - 0.5) / 0.25));
  CHECK(out[4] == Approx((11 / 255.0 - 0.5) / 0.25));   // R at (1, 1)
  CHECK(out[6 + 2] == Approx((100 / 255.0 - 0.5) / 0.5));
  CHECK(out[12 + 5] == Approx(0.5));

  normalize(src, out.data(), {.flip = true});
  CHECK(out[0] == Approx(20 / 255.0));  // R at (0, 0) is the source's (2, 0)
  CHECK(out[3] == Approx(21 / 255.0));

  normalize(src, out.data(), {.layout = Layout::hwc});
  CHECK(out[3 * 4 + 0] == Approx(11 / 255.0));
  CHECK(out[3 * 4 + 2] == Approx(1.0));
}

TEST_CASE("normalize writes float16 and uint8, cast keeps values") {
  std::vector<std::uint8_t> bytes = {0, 51, 255, 128};
  const Image src = packed_image(bytes.data(), 2, 2, 1);
  std::vector<std::uint16_t> half(4);
  normalize(src, half.data(), {.dtype = sluice::DType::f16});
  CHECK(half[0] == 0x0000);
  CHECK(half[1] == sluice::float_to_half(0.2f));
  CHECK(half[2] == 0x3c00);  // 1.0
  std::vector<float> f(4);
  cast(src, f.data(), sluice::DType::f32);
  CHECK(f[3] == 128.0f);
  std::vector<std::uint8_t> u(4);
  normalize(src, u.data(), {.dtype = sluice::DType::u8, .mean = {0.5f}, .std = {1.0f / 255}});
  CHECK(u[1] == 0);      // (51/255 - 0.5) * 255 < 0: clamped
  CHECK(u[2] == 128);    // 127.5 rounds to even: 128
  normalize(src, u.data(), {.dtype = sluice::DType::u8});  // no mean, no std: the values kept, not [0, 1]
  CHECK(u == std::vector<std::uint8_t>{0, 51, 255, 128});
  normalize(src, u.data(), {.dtype = sluice::DType::u8, .scale = 1.0f / 255});  // [0, 1] when asked
  CHECK(u == std::vector<std::uint8_t>{0, 0, 1, 1});

  std::vector<std::uint16_t> wide = {0, 65535};
  std::vector<float> wf(2);
  normalize(packed_image(wide.data(), 1, 2, 1, sluice::DType::u16), wf.data(), {});
  CHECK(wf[1] == Approx(1.0));
  CHECK_THROWS_AS(normalize(src, f.data(), {.std = {0, 1, 1, 1}}), sluice::Error);
  CHECK_THROWS_AS(normalize(src, f.data(), {.dtype = sluice::DType::i32}), sluice::Error);
}
