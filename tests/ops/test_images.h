// test_images.h: helpers shared by the ops tests.
#pragma once

#include <unistd.h>

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "skip.h"
#include "sluice/error.h"
#include "sluice/ops/decode.h"
#include "sluice/ops/image.h"

namespace sluice::ops::test {

inline std::string pillow_path(const std::string& name) { return std::string(SLUICE_PILLOW_IMAGES) + "/" + name; }

inline std::vector<std::uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline std::vector<std::uint8_t> pillow_file(const std::string& name) { return read_bytes(pillow_path(name)); }

inline void write_bytes(const std::string& path, const std::vector<std::uint8_t>& bytes) {
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

// Pillow's test images (../shared/data), or false after a WARN: the test then
// is skipped (skip.h).
inline bool have_pillow_images() {
  if (std::filesystem::is_directory(SLUICE_PILLOW_IMAGES)) return true;
  sluice::test::exit_if_skip_code(std::string(SLUICE_PILLOW_IMAGES) + " is absent (the real-data fixtures)");
  WARN("skipped: " << SLUICE_PILLOW_IMAGES << " is absent (the real-data fixtures)");
  return false;
}

// An executable program, or false after a WARN naming its Debian package.
inline bool have_program(const char* path, const char* package) {
  if (::access(path, X_OK) == 0) return true;
  sluice::test::exit_if_skip_code(std::string(path) + " is absent (Debian package " + package + ")");
  WARN("skipped: " << path << " is absent (Debian package " << package << ")");
  return false;
}

// A directory removed with everything in it at the end of the scope.
class TempDir {
 public:
  TempDir() {
    char pattern[] = "/tmp/sluice-ops-test-XXXXXX";
    if (::mkdtemp(pattern) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// Runs a shell command; true when it exits 0.
inline bool shell(const std::string& command) { return std::system(command.c_str()) == 0; }

// A binary PGM/PPM (P5/P6, maxval 255) as written by djpeg and the PIL helper.
struct Pnm {
  int width = 0, height = 0, channels = 0;
  std::vector<std::uint8_t> pixels;
};

inline Pnm read_pnm(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string magic;
  int maxval = 0;
  Pnm p;
  in >> magic >> p.width >> p.height >> maxval;
  in.get();  // the one whitespace byte after maxval
  if (!in || maxval != 255 || (magic != "P5" && magic != "P6")) return {};
  p.channels = magic == "P5" ? 1 : 3;
  p.pixels.resize(static_cast<std::size_t>(p.width) * p.height * p.channels);
  in.read(reinterpret_cast<char*>(p.pixels.data()), static_cast<std::streamsize>(p.pixels.size()));
  return in ? p : Pnm{};
}

// Writes an RGB uint8 image as a binary PPM (P6), for cjpeg.
inline void write_ppm(const std::string& path, const Image& rgb) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  REQUIRE(f != nullptr);
  std::fprintf(f, "P6\n%d %d\n255\n", rgb.width, rgb.height);
  for (int y = 0; y < rgb.height; ++y) std::fwrite(rgb.row<std::uint8_t>(y), 1, rgb.row_bytes(), f);
  std::fclose(f);
}

// JPEGs encoded by libjpeg-turbo's cjpeg from one photo (Pillow's flower.jpg,
// 480x360), in a temporary folder. ready() is false, after a WARN, when the
// photo or cjpeg is absent.
class Cjpeg {
 public:
  bool ready() {
    if (!have_pillow_images() || !have_program("/usr/bin/cjpeg", "libjpeg-turbo-progs")) return false;
    ImageDecoder decoder;
    const auto flower = pillow_file("flower.jpg");
    write_ppm(dir_.file("src.ppm"), decoder.decode(flower.data(), flower.size(), "flower.jpg").image);
    return true;
  }
  // The photo through `cjpeg ARGS` (a -scans script written from `scans`).
  std::vector<std::uint8_t> encode(const std::string& args, const std::string& scans = "") {
    std::string command = "/usr/bin/cjpeg " + args;
    if (!scans.empty()) {
      std::ofstream(dir_.file("scans.txt")) << scans;
      command += " -scans " + dir_.file("scans.txt");
    }
    REQUIRE(shell(command + " " + dir_.file("src.ppm") + " > " + dir_.file("out.jpg")));
    return read_bytes(dir_.file("out.jpg"));
  }
  std::string file(const std::string& name) const { return dir_.file(name); }

 private:
  TempDir dir_;
};

// A cjpeg -scans script whose progression never refines the last bit of the
// AC coefficients: a progressive JPEG left unfinished.
inline constexpr const char* kUnfinishedProgression =
    "0,1,2: 0-0, 0, 1 ;\n0: 1-63, 0, 1 ;\n1: 1-63, 0, 1 ;\n2: 1-63, 0, 1 ;\n0,1,2: 0-0, 1, 0 ;\n";

struct Sos {
  std::size_t at;  // the FF DA marker
  int components, first_id, ss, se, ah, al;
};

// The scan headers of a cjpeg file (its only other segments are headers and
// tables, so FF DA appears nowhere else).
inline std::vector<Sos> scans_of(const std::vector<std::uint8_t>& f) {
  std::vector<Sos> out;
  for (std::size_t i = 0; i + 1 < f.size(); ++i) {
    if (f[i] != 0xFF || f[i + 1] != 0xDA) continue;
    const int n = f[i + 4];
    const std::size_t tail = i + 5 + 2 * static_cast<std::size_t>(n);
    out.push_back({i, n, f[i + 5], f[tail], f[tail + 1], f[tail + 2] >> 4, f[tail + 2] & 15});
  }
  return out;
}

// The PNG (zlib) CRC-32.
inline std::uint32_t crc32(const std::uint8_t* p, std::size_t n) {
  std::uint32_t c = 0xffffffffu;
  for (std::size_t i = 0; i < n; ++i) {
    c ^= p[i];
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1u)));
  }
  return ~c;
}

// Offset of the first marker segment `marker` of a JPEG, up to the first scan (SOS), or 0.
inline std::size_t find_segment(const std::vector<std::uint8_t>& jpeg, std::uint8_t marker) {
  std::size_t at = 2;
  while (at + 4 <= jpeg.size() && jpeg[at] == 0xFF) {
    if (jpeg[at + 1] == marker) return at;
    if (jpeg[at + 1] == 0xDA) return 0;
    at += 2 + ((jpeg[at + 2] << 8) | jpeg[at + 3]);
  }
  return 0;
}

// The JPEG with a DHT whose code counts add up to more than 256 codes:
// libjpeg's "Bogus Huffman table definition", in the header.
inline std::vector<std::uint8_t> bogus_huffman(std::vector<std::uint8_t> jpeg) {
  const std::size_t dht = find_segment(jpeg, 0xC4);
  REQUIRE(dht != 0);
  for (int i = 0; i < 16; ++i) jpeg[dht + 5 + i] = 0xFF;
  return jpeg;
}

// decode()'s error message, or "" when the bytes decode.
inline std::string decode_error(ImageDecoder& decoder, const std::vector<std::uint8_t>& bytes, const std::string& name,
                                const DecodeOptions& options = {}) {
  try {
    decoder.decode(bytes.data(), bytes.size(), name, options);
  } catch (const sluice::Error& e) {
    return e.what();
  }
  return "";
}

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

inline bool same_pixels(const Image& a, const Image& b) {
  if (a.height != b.height || a.width != b.width || a.channels != b.channels || a.dtype != b.dtype) return false;
  for (int y = 0; y < a.height; ++y) {
    if (std::memcmp(a.row<std::uint8_t>(y), b.row<std::uint8_t>(y), a.row_bytes()) != 0) return false;
  }
  return true;
}

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
