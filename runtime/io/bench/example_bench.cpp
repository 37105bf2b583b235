// sluice_example_bench: tf.train.Example decoding speed, as a ratio against a
// plain copy of the same records measured in the same run (median of --runs).
//
// The records are typical training Examples, written by sample_encoding.cpp's
// encoder: an "image" bytes_list (one value of --image-bytes random bytes, and
// a thumbnail-sized case of 4 KiB), an int64 "label" and a 64-value float
// "embedding", plus the "__key__" every written Example carries. Sluice:
// Example::parse of each record, then the three features read (the image's
// size, the label, the sum of the floats), as a pipeline does. Baseline: a
// memcpy of each record into one reusable buffer, the least any decoder that
// owns its values costs. The first-touch page cost is printed with each ratio.
//
// usage: sluice_example_bench [--runs N] [--records N] [--image-bytes N]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "harness.h"
#include "sample_encoding.h"
#include "sluice/io/example.h"

using namespace sluice::io;
using sluice::bench::median;
using sluice::bench::Stopwatch;

namespace {

// `count` distinct serialized Examples with `image_bytes` of image each.
std::vector<std::string> make_records(std::size_t count, std::size_t image_bytes) {
  std::vector<ManifestField> specs = {{"image", "bytes", {}, ""},
                                      {"label", "int64", {}, ""},
                                      {"embedding", "float32", {64}, ""}};
  const auto fields = detail::prepare_fields(specs);
  std::mt19937_64 rng(42);
  std::vector<std::string> records(count);
  std::vector<std::byte> image(image_bytes);
  std::vector<float> embedding(64);
  for (std::size_t r = 0; r < count; ++r) {
    for (auto& b : image) b = static_cast<std::byte>(rng());
    const std::int64_t label = static_cast<std::int64_t>(rng() % 1000);
    for (float& f : embedding) f = static_cast<float>(rng() % 1000) / 7.0f;
    const std::span<const std::byte> values[] = {image, std::as_bytes(std::span(&label, 1)),
                                                  std::as_bytes(std::span(embedding))};
    detail::encode_example(detail::sample_key(r), fields, values, records[r]);
  }
  return records;
}

std::span<const std::byte> bytes_of(const std::string& s) {
  return std::as_bytes(std::span(s.data(), s.size()));
}

// Records per second of Example::parse plus reading the three features.
double decode_rate(const std::vector<std::string>& records, std::size_t total, double& checksum) {
  Example ex;
  const Stopwatch clock;
  for (std::size_t i = 0; i < total; ++i) {
    ex.parse(bytes_of(records[i % records.size()]));
    checksum += static_cast<double>(ex.bytes_at("image", 0).size());
    checksum += static_cast<double>(ex.int64s("label")[0]);
    for (float f : ex.floats("embedding")) checksum += f;
  }
  return static_cast<double>(total) / clock.seconds();
}

double copy_rate(const std::vector<std::string>& records, std::size_t total, double& checksum) {
  std::vector<char> buf;
  const Stopwatch clock;
  for (std::size_t i = 0; i < total; ++i) {
    const std::string& r = records[i % records.size()];
    if (buf.size() < r.size()) buf.resize(r.size());
    std::memcpy(buf.data(), r.data(), r.size());
    sluice::bench::keep(static_cast<std::uint64_t>(buf[r.size() / 2]));
    checksum += 1;
  }
  return static_cast<double>(total) / clock.seconds();
}

}  // namespace

int main(int argc, char** argv) {
  int runs = 7;
  std::size_t total = 20000, image_bytes = 110 * 1024;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string arg = argv[i];
    const long long v = std::atoll(argv[i + 1]);
    if (arg == "--runs") runs = static_cast<int>(v);
    else if (arg == "--records") total = static_cast<std::size_t>(v);
    else if (arg == "--image-bytes") image_bytes = static_cast<std::size_t>(v);
    else {
      std::fprintf(stderr, "usage: sluice_example_bench [--runs N] [--records N] [--image-bytes N]\n");
      return 2;
    }
  }
  if (runs < 1 || total < 1) return 2;
  const double touch = sluice::bench::first_touch_us();
  std::printf("first-touch cost: %.2f us per 4 KiB page\n", touch);
  double checksum = 0;
  try {
    for (std::size_t image : {std::size_t{4096}, image_bytes}) {
      const auto records = make_records(64, image);
      std::vector<double> decode, copy;
      for (int r = 0; r < runs; ++r) {  // alternating, so drift hits both alike
        decode.push_back(decode_rate(records, total, checksum));
        copy.push_back(copy_rate(records, total, checksum));
      }
      const double d = median(decode), c = median(copy);
      std::printf("Example of %zu bytes (image %zu B, int64 label, 64 floats): Example::parse + read %.0f records/s "
                  "(%.1f us each), memcpy %.0f records/s, ratio %.3f; medians of %d; first touch %.2f us/page\n",
                  records[0].size(), image, d, 1e6 / d, c, d / c, runs, touch);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sluice_example_bench: %s\n", e.what());
    return 1;
  }
  std::printf("(checksum %.0f)\n", checksum);
  return 0;
}
