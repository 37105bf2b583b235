// encode_jpeg: real photos encoded and read back by our decoder and by PIL
// (Debian's python3-pil, an independent encoder and decoder over the same
// libjpeg-turbo): the bytes are PIL's own for the same pixels and quality.
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "sluice/ops/encode.h"
#include "test_images.h"

using namespace sluice::ops;
using namespace sluice::ops::test;

namespace {

double psnr(const std::uint8_t* a, const std::uint8_t* b, std::size_t n) {
  double se = 0;
  for (std::size_t i = 0; i < n; ++i) se += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
  return se == 0 ? 99 : 10 * std::log10(255.0 * 255.0 / (se / double(n)));
}

}  // namespace

TEST_CASE("encode_jpeg: a photo comes back close at quality 90, and PIL writes the same bytes", "[jpeg_encode]") {
  if (!have_pillow_images()) return;
  ImageDecoder decoder;
  for (const char* name : {"hopper.jpg", "flower2.jpg", "hopper.png", "hopper_gray.jpg"}) {
    INFO(name);
    const auto file = pillow_file(name);
    const bool gray = std::string(name) == "hopper_gray.jpg";
    DecodedImage d = decoder.decode(file.data(), file.size(), name, {.channels = gray ? 1 : 3});
    const Image src = d.image;
    std::vector<std::uint8_t> pixels(static_cast<std::size_t>(src.height) * src.width * src.channels);
    for (int y = 0; y < src.height; ++y)
      std::memcpy(pixels.data() + static_cast<std::size_t>(y) * src.width * src.channels,
                  static_cast<const std::uint8_t*>(src.data) + y * src.stride,
                  static_cast<std::size_t>(src.width) * src.channels);
    std::vector<std::byte> jpeg;
    encode_jpeg(packed_image(pixels.data(), src.height, src.width, src.channels), {.quality = 90}, jpeg);
    REQUIRE(jpeg.size() > 100);
    CHECK(jpeg.size() < pixels.size());
    DecodedImage back = decoder.decode(jpeg.data(), jpeg.size(), "encoded", {.channels = gray ? 1 : 3});
    REQUIRE(back.image.width == src.width);
    REQUIRE(back.image.height == src.height);
    std::vector<std::uint8_t> again(pixels.size());
    for (int y = 0; y < src.height; ++y)
      std::memcpy(again.data() + static_cast<std::size_t>(y) * src.width * src.channels,
                  static_cast<const std::uint8_t*>(back.image.data) + y * back.image.stride,
                  static_cast<std::size_t>(src.width) * src.channels);
    CHECK(psnr(pixels.data(), again.data(), pixels.size()) > 33);

    // PIL: the same pixels, quality 90, its defaults.
    if (std::system("/usr/bin/python3 -c 'import PIL' 2>/dev/null") != 0) {
      WARN("skipped: the comparison with PIL (/usr/bin/python3 with Debian's python3-pil is absent)");
      continue;
    }
    TempDir dir;
    const std::string raw = dir.file("pixels.raw"), ours = dir.file("ours.jpg");
    write_bytes(raw, pixels);
    write_bytes(ours, std::vector<std::uint8_t>(reinterpret_cast<const std::uint8_t*>(jpeg.data()),
                                                reinterpret_cast<const std::uint8_t*>(jpeg.data()) + jpeg.size()));
    const std::string cmd = "/usr/bin/python3 -c 'import io, sys; from PIL import Image\n"
                            "w, h, mode = int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]\n"
                            "im = Image.frombytes(mode, (w, h), open(sys.argv[1], \"rb\").read())\n"
                            "out = io.BytesIO(); im.save(out, format=\"JPEG\", quality=90)\n"
                            "ours = open(sys.argv[2], \"rb\").read()\n"
                            "assert Image.open(sys.argv[2]).size == (w, h)\n"
                            "sys.exit(0 if out.getvalue() == ours else 1)' " +
                            raw + " " + ours + " " + std::to_string(src.width) + " " + std::to_string(src.height) +
                            (gray ? " L" : " RGB");
    CHECK(std::system(cmd.c_str()) == 0);
  }
}

TEST_CASE("encode_jpeg: what it refuses", "[jpeg_encode]") {
  std::vector<std::uint8_t> px(8 * 8 * 4, 7);
  std::vector<std::byte> out;
  CHECK_THROWS_WITH(encode_jpeg(packed_image(px.data(), 8, 8, 4), {}, out), Catch::Contains("1 (gray) or 3 (RGB)"));
  CHECK_THROWS_WITH(encode_jpeg(packed_image(px.data(), 8, 8, 3), {.quality = 0}, out),
                    Catch::Contains("quality 0"));
  std::vector<std::uint16_t> wide(8 * 8 * 3);
  CHECK_THROWS(encode_jpeg(packed_image(wide.data(), 8, 8, 3, sluice::DType::u16), {}, out));
  encode_jpeg(packed_image(px.data(), 1, 1, 3), {.quality = 100}, out);
  CHECK(out.size() > 100);
}
