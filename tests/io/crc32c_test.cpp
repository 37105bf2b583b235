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

TEST_CASE("crc32c: the vector, crc32-instruction and table paths agree on every length and alignment",
          "[crc32c]") {
  std::mt19937 rng(7);
  std::vector<std::byte> buf(320000);
  for (auto& b : buf) b = std::byte(rng());
  for (std::size_t n : {0, 1, 7, 8, 9, 255, 256, 511, 512, 767, 768, 769, 5000, 24575, 24576, 24577,
                        51199, 51200, 51201, 79000, 103177, 300001}) {
    for (std::size_t shift : {0, 1, 3, 7}) {
      std::span<const std::byte> s(buf.data() + shift, n);
      INFO("length " << n << " shift " << shift);
      const std::uint32_t expected = crc32c_portable(s);
      CHECK(crc32c(s) == expected);
      CHECK(crc32c_sse42(s) == expected);
    }
  }
  // Continuing a CRC over a split equals one pass.
  std::span<const std::byte> all(buf.data(), 250000);
  CHECK(crc32c(all.subspan(30000), crc32c(all.first(30000))) == crc32c(all));
  CHECK(crc32c(all.subspan(51200), crc32c(all.first(51200))) == crc32c_portable(all));
}
