#include <catch2/catch.hpp>
#include <random>
#include <vector>

#include "io_test_support.h"
#include "sluice/io/crc32c.h"

using namespace sluice::io;

TEST_CASE("crc32c matches the published check value", "[crc32c]") {
  auto data = test::bytes_of("123456789");
  CHECK(crc32c(data) == 0xe3069283u);
  CHECK(crc32c_portable(data) == 0xe3069283u);
  CHECK(crc32c({}) == 0u);
}

TEST_CASE("crc32c: the hardware and table paths agree on every length and alignment", "[crc32c]") {
  std::mt19937 rng(7);
  std::vector<std::byte> buf(80000);
  for (auto& b : buf) b = std::byte(rng());
  for (std::size_t n : {0, 1, 7, 8, 9, 255, 256, 767, 768, 769, 5000, 24575, 24576, 24577, 79000}) {
    for (std::size_t shift : {0, 1, 3, 7}) {
      std::span<const std::byte> s(buf.data() + shift, n);
      INFO("length " << n << " shift " << shift);
      CHECK(crc32c(s) == crc32c_portable(s));
    }
  }
  // Continuing a CRC over a split equals one pass.
  std::span<const std::byte> all(buf.data(), 50000);
  CHECK(crc32c(all.subspan(30000), crc32c(all.first(30000))) == crc32c(all));
}
