// Every file of Pillow's test images through the decoder, in several modes:
// each decodes to the size its header gives, or fails with sluice::Error
// naming the file. Nothing crashes, nothing allocates without bound.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "sluice/error.h"
#include "sluice/ops/decode.h"
#include "sluice/ops/geometry.h"
#include "sluice/ops/normalize.h"
#include "test_images.h"

using namespace sluice::ops;
using namespace sluice::ops::test;

namespace {

std::vector<std::filesystem::path> pillow_images() {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(SLUICE_PILLOW_IMAGES)) {
    const std::string ext = entry.path().extension().string();
    if (entry.is_regular_file() && (ext == ".png" || ext == ".jpg" || ext == ".jpeg")) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

TEST_CASE("every Pillow test image decodes or fails cleanly") {
  if (!have_pillow_images()) return;
  const auto files = pillow_images();
  REQUIRE(files.size() >= 470);
  const DecodeOptions modes[] = {
      {},
      {.channels = 1},
      {.channels = 4, .dtype = sluice::DType::u16},
      {.scale = 0.25, .apply_exif_orientation = true},
  };
  ImageDecoder decoder;
  Resampler resampler;
  std::vector<float> out(3 * 32 * 32);
  std::vector<std::uint8_t> small(32 * 32 * 4);
  int decoded = 0, refused = 0;
  for (const auto& path : files) {
    const std::string name = path.filename().string();
    const auto bytes = read_bytes(path.string());
    INFO(name);
    for (const DecodeOptions& mode : modes) {
      try {
        const ImageInfo info = decoder.info(bytes.data(), bytes.size(), name, mode.apply_exif_orientation);
        const DecodedImage d = decoder.decode(bytes.data(), bytes.size(), name, mode);
        REQUIRE(d.info.width == info.width);
        REQUIRE(d.info.height == info.height);
        REQUIRE(d.image.width == (info.width + d.scale_divisor - 1) / d.scale_divisor);
        REQUIRE(d.image.height == (info.height + d.scale_divisor - 1) / d.scale_divisor);
        REQUIRE(d.image.channels == mode.channels);
        REQUIRE(d.image.dtype == mode.dtype);
        if (mode.channels == 3 && mode.dtype == sluice::DType::u8) {
          const Image thumb = packed_image(small.data(), 32, 32, 3);
          resampler.resize(d.image, thumb);
          normalize(thumb, out.data(), {.flip = true});
        }
        ++decoded;
      } catch (const sluice::Error& e) {
        const std::string message = e.what();
        REQUIRE(message.rfind(name + ": ", 0) == 0);
        ++refused;
      }
    }
  }
  // Pillow reads all but a handful; those it refuses are the broken ones.
  CHECK(decoded >= 4 * 460);
  CHECK(refused > 0);
}
