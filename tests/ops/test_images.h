// test_images.h: helpers shared by the ops tests.
#pragma once

#include <cstdint>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "sluice/ops/image.h"

namespace sluice::ops::test {

inline std::string pillow_path(const std::string& name) { return std::string(SLUICE_PILLOW_IMAGES) + "/" + name; }

inline std::vector<std::uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline std::vector<std::uint8_t> pillow_file(const std::string& name) { return read_bytes(pillow_path(name)); }

// Mean absolute difference of two same-shaped uint8 images.
inline double mean_abs_diff(const Image& a, const Image& b) {
  double sum = 0;
  for (int y = 0; y < a.height; ++y) {
    const auto* p = a.row<std::uint8_t>(y);
    const auto* q = b.row<std::uint8_t>(y);
    for (std::size_t i = 0; i < a.row_bytes(); ++i) sum += p[i] > q[i] ? p[i] - q[i] : q[i] - p[i];
  }
  return sum / (static_cast<double>(a.height) * a.row_bytes());
}

// A packed copy of an image (decoders reuse their memory).
struct OwnedImage {
  std::vector<std::uint8_t> bytes;
  Image image;
};

inline OwnedImage own(const Image& src) {
  OwnedImage o;
  o.bytes.resize(src.row_bytes() * static_cast<std::size_t>(src.height));
  o.image = packed_image(o.bytes.data(), src.height, src.width, src.channels, src.dtype);
  for (int y = 0; y < src.height; ++y) {
    std::copy_n(src.row<std::uint8_t>(y), src.row_bytes(), o.image.row<std::uint8_t>(y));
  }
  return o;
}

}  // namespace sluice::ops::test
