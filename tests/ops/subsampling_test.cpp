// JPEGs with every chroma sampling libjpeg accepts, chroma finer than luma and
// asymmetric factors included, decode to libjpeg's own pixels (djpeg: the
// same library, so exactly) and to PIL's, at every DCT scale.
#include <catch2/catch.hpp>

#include <cstdio>
#include <string>
#include <vector>

#include "sluice/ops/decode.h"
#include "test_images.h"

using namespace sluice::ops;
using namespace sluice::ops::test;

namespace {

// Sampling factors for Y, Cb, Cr, as cjpeg -sample takes them.
const char* const kSamplings[] = {
    "1x2,2x1,1x1", "2x1,1x2,1x1", "1x1,2x2,2x2", "2x2,1x2,2x1", "1x2,1x1,1x1", "4x1,1x1,1x1", "2x2,1x1,1x1",
};

bool matches(const Image& image, const Pnm& reference) {
  if (reference.pixels.empty()) return false;
  const Image ref = packed_image(const_cast<std::uint8_t*>(reference.pixels.data()), reference.height,
                                 reference.width, reference.channels);
  return same_pixels(image, ref);
}

bool have_pil() {
  if (shell("/usr/bin/python3 -c 'import PIL' 2>/dev/null")) return true;
  WARN("skipped: the comparison with PIL (/usr/bin/python3 with Debian's python3-pil is absent)");
  return false;
}

}  // namespace

TEST_CASE("odd chroma subsamplings decode to djpeg's and PIL's pixels") {
  if (!have_pillow_images() || !have_program("/usr/bin/cjpeg", "libjpeg-turbo-progs") ||
      !have_program("/usr/bin/djpeg", "libjpeg-turbo-progs")) {
    return;
  }
  const bool pil = have_pil();
  TempDir dir;
  ImageDecoder decoder;
  {
    // A real photo as the source: its detail makes every chroma error show.
    const auto hopper = pillow_file("hopper.jpg");
    write_ppm(dir.file("src.ppm"), decoder.decode(hopper.data(), hopper.size(), "hopper.jpg").image);
  }
  for (const char* sampling : kSamplings) {
    INFO("cjpeg -sample " << sampling);
    const std::string jpg = dir.file("s.jpg"), ref = dir.file("ref.pnm");
    REQUIRE(shell(std::string("/usr/bin/cjpeg -quality 90 -sample ") + sampling + " " + dir.file("src.ppm") + " > " +
                  jpg));
    const auto bytes = read_bytes(jpg);
    for (const int divisor : {1, 2, 4, 8}) {
      INFO("scale 1/" << divisor);
      REQUIRE(shell("/usr/bin/djpeg -scale 1/" + std::to_string(divisor) + " " + jpg + " > " + ref));
      const DecodedImage d = decoder.decode(bytes.data(), bytes.size(), "s.jpg", {.scale = 1.0 / divisor});
      CHECK(d.scale_divisor == divisor);
      CHECK(matches(d.image, read_pnm(ref)));
    }
    REQUIRE(shell("/usr/bin/djpeg -grayscale " + jpg + " > " + ref));
    CHECK(matches(decoder.decode(bytes.data(), bytes.size(), "s.jpg", {.channels = 1}).image, read_pnm(ref)));
    if (pil) {
      REQUIRE(shell("/usr/bin/python3 -c 'import sys; from PIL import Image; im = Image.open(sys.argv[1]).convert(\"RGB\");"
                    " sys.stdout.buffer.write(b\"P6\\n%d %d\\n255\\n\" % im.size + im.tobytes())' " +
                    jpg + " > " + ref));
      CHECK(matches(decoder.decode(bytes.data(), bytes.size(), "s.jpg").image, read_pnm(ref)));
    }
  }
}
