#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "sluice/error.h"
#include "sluice/ops/geometry.h"

using namespace sluice::ops;

namespace {

// The 7x5 RGB image the Pillow reference values below were computed from.
std::vector<std::uint8_t> pattern() {
  std::vector<std::uint8_t> p;
  for (int y = 0; y < 5; ++y) {
    for (int x = 0; x < 7; ++x) {
      p.push_back(static_cast<std::uint8_t>((x * 37 + y * 11) % 256));
      p.push_back(static_cast<std::uint8_t>((x * 5 + y * 50) % 256));
      p.push_back(static_cast<std::uint8_t>(255 - (x * 20) % 256));
    }
  }
  return p;
}

std::vector<int> resized(Image src, const Box* box, int width, int height, Filter filter) {
  std::vector<std::uint8_t> out(static_cast<std::size_t>(width) * height * 3);
  Resampler r;
  const Image dst = packed_image(out.data(), height, width, 3);
  if (box) {
    r.resize(src, *box, dst, filter);
  } else {
    r.resize(src, dst, filter);
  }
  return {out.begin(), out.end()};
}

struct Sequence {  // a UniformSource replaying fixed numbers
  std::vector<double> values;
  std::size_t next = 0;
  static double draw(void* self) {
    auto* s = static_cast<Sequence*>(self);
    return s->values[s->next++ % s->values.size()];
  }
  UniformSource source() { return {draw, this}; }
};

}  // namespace

TEST_CASE("resize matches Pillow bit for bit") {
  auto bytes = pattern();
  const Image src = packed_image(bytes.data(), 5, 7, 3);
  // PIL: Image.fromarray(pattern).resize((3, 4), BILINEAR / BOX)
  CHECK(resized(src, nullptr, 3, 4, Filter::bilinear) ==
        std::vector<int>{35, 17, 238, 114, 28, 195, 193, 39, 152, 48, 75, 238, 127, 86, 195, 206, 97, 152,
                         60, 133, 238, 139, 144, 195, 218, 155, 152, 73, 192, 238, 152, 203, 195, 163, 214, 152});
  CHECK(resized(src, nullptr, 3, 4, Filter::area) ==
        std::vector<int>{19, 3, 245, 111, 15, 195, 204, 28, 145, 36, 78, 245, 128, 90, 195, 221, 103, 145,
                         52, 153, 245, 144, 165, 195, 237, 178, 145, 63, 203, 245, 155, 215, 195, 120, 228, 145});
  // PIL: .crop((1, 1, 6, 5)).resize((4, 3), BILINEAR / BOX)
  const Box box{1, 1, 6, 5};
  CHECK(resized(src, &box, 4, 3, Filter::bilinear) ==
        std::vector<int>{60, 71, 230, 103, 77, 207, 147, 83, 183, 190, 89, 160, 74, 131, 230, 117, 137, 207,
                         161, 143, 183, 204, 149, 160, 87, 191, 230, 130, 197, 207, 174, 203, 183, 217, 209, 160});
  CHECK(resized(src, &box, 4, 3, Filter::area) ==
        std::vector<int>{48, 55, 235, 104, 63, 205, 159, 70, 175, 196, 75, 155, 65, 130, 235, 121, 138, 205,
                         176, 145, 175, 213, 150, 155, 81, 205, 235, 137, 213, 205, 192, 220, 175, 229, 225, 155});
  // PIL: .resize((11, 9), BILINEAR), first 10 pixels
  const auto up = resized(src, nullptr, 11, 9, Filter::bilinear);
  CHECK(std::vector<int>(up.begin(), up.begin() + 30) ==
        std::vector<int>{0, 0, 255, 17, 2, 246, 40, 5, 233, 64, 9, 220, 87, 12, 208, 111, 15, 195,
                         135, 18, 182, 158, 21, 170, 182, 25, 157, 205, 28, 144});
  // Same size, whole image: a copy.
  CHECK(resized(src, nullptr, 7, 5, Filter::bilinear) == std::vector<int>(bytes.begin(), bytes.end()));
}

TEST_CASE("resize keeps a constant image constant, in uint8 and uint16") {
  std::vector<std::uint16_t> wide(40 * 30 * 4, 40000);
  std::vector<std::uint16_t> out(13 * 17 * 4);
  Resampler r;
  r.resize(packed_image(wide.data(), 30, 40, 4, sluice::DType::u16),
           packed_image(out.data(), 17, 13, 4, sluice::DType::u16));
  for (std::uint16_t v : out) REQUIRE(v == 40000);
  std::vector<std::uint8_t> gray(40 * 30, 77), small(5 * 9), big(100 * 70);
  r.resize(packed_image(gray.data(), 30, 40, 1), Box{3.5, 2.25, 39.0, 29.5}, packed_image(small.data(), 9, 5, 1),
           Filter::area);
  for (std::uint8_t v : small) REQUIRE(v == 77);
  r.resize(packed_image(gray.data(), 30, 40, 1), packed_image(big.data(), 70, 100, 1));
  for (std::uint8_t v : big) REQUIRE(v == 77);
}

TEST_CASE("resize refuses boxes outside the image and mismatched images") {
  std::vector<std::uint8_t> a(10 * 10 * 3), b(4 * 4 * 3);
  Resampler r;
  const Image src = packed_image(a.data(), 10, 10, 3), dst = packed_image(b.data(), 4, 4, 3);
  CHECK_THROWS_AS(r.resize(src, Box{0, 0, 11, 10}, dst), sluice::Error);
  CHECK_THROWS_AS(r.resize(src, Box{5, 0, 5, 10}, dst), sluice::Error);
  CHECK_THROWS_AS(r.resize(src, packed_image(b.data(), 4, 4, 1)), sluice::Error);
}

TEST_CASE("crop is a view, flip mirrors, pad surrounds") {
  auto bytes = pattern();
  const Image src = packed_image(bytes.data(), 5, 7, 3);
  const Image c = crop(src, Rect{2, 1, 3, 4});
  CHECK(c.width == 3);
  CHECK(c.height == 4);
  CHECK(c.row<std::uint8_t>(0)[0] == (2 * 37 + 11));
  CHECK_THROWS_AS(crop(src, Rect{5, 0, 3, 1}), sluice::Error);
  CHECK_THROWS_AS(crop(src, Rect{0, 0, 0, 1}), sluice::Error);

  std::vector<std::uint8_t> flipped(bytes.size());
  const Image f = packed_image(flipped.data(), 5, 7, 3);
  flip_horizontal(src, f);
  CHECK(f.row<std::uint8_t>(2)[0] == src.row<std::uint8_t>(2)[6 * 3]);
  flip_horizontal(f, f);  // in place, back again
  CHECK(flipped == bytes);

  std::vector<std::uint8_t> padded(9 * 10 * 3);
  const Image p = packed_image(padded.data(), 9, 10, 3);
  pad(src, p, 2, 1, {1, 2, 3, 0});
  CHECK(p.row<std::uint8_t>(0)[0] == 1);
  CHECK(p.row<std::uint8_t>(8)[29] == 3);
  CHECK(p.row<std::uint8_t>(2)[3] == src.row<std::uint8_t>(0)[0]);
  CHECK(p.row<std::uint8_t>(6)[3 * 7 + 2] == src.row<std::uint8_t>(4)[3 * 6 + 2]);
  CHECK(p.row<std::uint8_t>(6)[3 * 8] == 1);
  CHECK_THROWS_AS(pad(src, p, 5, 0), sluice::Error);
}

TEST_CASE("random resized crop follows torchvision's sampling") {
  // Draws: area fraction, log-ratio, then y, x. All 0.5: area 0.54, ratio 1.
  Sequence half{{0.5}};
  const Rect r = random_resized_crop(300, 200, half.source());
  const int side = 180;  // round(sqrt(300 * 200 * 0.54))
  CHECK(r.width == side);
  CHECK(r.height == side);
  CHECK(r.y == static_cast<int>(0.5 * (200 - side + 1)));
  CHECK(r.x == static_cast<int>(0.5 * (300 - side + 1)));
  CHECK(half.next == 4);

  // Never fits (the whole area at ratio 1 in a 1000x10 strip): centre crop at the ratio bound.
  Sequence full{{0.999}};
  const Rect fallback = random_resized_crop(1000, 10, full.source(), {.scale_min = 1, .ratio_min = 1, .ratio_max = 1});
  CHECK(full.next == 20);
  CHECK(fallback.width == 10);
  CHECK(fallback.height == 10);
  CHECK(fallback.x == 495);
  CHECK(fallback.y == 0);

  // Always inside the image.
  Sequence spread{{0.01, 0.99, 0.37, 0.999, 0.5, 0.0, 0.73, 0.2, 0.91}};
  for (int i = 0; i < 200; ++i) {
    const Rect c = random_resized_crop(333, 127, spread.source());
    REQUIRE(c.x >= 0);
    REQUIRE(c.y >= 0);
    REQUIRE(c.width > 0);
    REQUIRE(c.height > 0);
    REQUIRE(c.x + c.width <= 333);
    REQUIRE(c.y + c.height <= 127);
  }
  CHECK_THROWS_AS(random_resized_crop(0, 10, half.source()), sluice::Error);
  CHECK_THROWS_AS(random_resized_crop(10, 10, half.source(), {.scale_min = 0.5, .scale_max = 0.1}), sluice::Error);
}
