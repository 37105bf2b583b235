#include <catch2/catch.hpp>
#include <cstring>
#include <random>
#include <vector>

#include "io_test_support.h"
#include "sequential_file.h"
#include "sluice/error.h"

using sluice::io::detail::SequentialFile;
namespace test = sluice::io::test;

namespace {

std::vector<std::byte> random_bytes(std::size_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::byte> v(n);
  for (auto& b : v) b = std::byte(rng());
  return v;
}

// Takes the whole file in spans of random sizes, small and large, checking
// each against the file's bytes at its offset.
void check_takes(SequentialFile& f, const std::vector<std::byte>& content, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::size_t at = 0;
  while (at < content.size()) {
    const std::size_t n = rng() % 4 == 0 ? 1 + rng() % (3 << 20) : 1 + rng() % 9000;
    REQUIRE(f.position() == at);
    const auto span = f.take(n);
    const std::size_t expect = std::min(n, content.size() - at);
    REQUIRE(span.size() == expect);
    REQUIRE(std::memcmp(span.data(), content.data() + at, expect) == 0);
    // Buffer index and file offset agree modulo a cache line (aligned copies).
    CHECK(reinterpret_cast<std::uintptr_t>(span.data()) % 64 == at % 64);
    at += expect;
  }
  CHECK(f.take(12).empty());
  CHECK(f.position() == content.size());
}

}  // namespace

TEST_CASE("sequential file: spans of any size come back in place and in order", "[sequential]") {
  test::TempDir tmp;
  const auto a = random_bytes(9 * 1024 * 1024 + 123, 1);
  const auto b = random_bytes(300 * 1024 + 5, 2);
  test::write_file(tmp.file("a"), a);
  test::write_file(tmp.file("b"), b);
  SequentialFile f(64 * 1024);
  CHECK_FALSE(f.is_open());
  f.open(tmp.file("a"));
  CHECK(f.size() == a.size());
  check_takes(f, a, 3);
  // The same object reads the next file from its start.
  f.open(tmp.file("b"));
  CHECK(f.size() == b.size());
  check_takes(f, b, 4);
  f.open(tmp.file("a"));
  check_takes(f, a, 5);
}

TEST_CASE("sequential file: a missing file is named and leaves nothing open", "[sequential]") {
  test::TempDir tmp;
  test::write_file(tmp.file("a"), random_bytes(1000, 6));
  SequentialFile f;
  f.open(tmp.file("a"));
  REQUIRE(f.take(10).size() == 10);
  try {
    f.open(tmp.file("missing"));
    FAIL("opened a missing file");
  } catch (const sluice::Error& e) {
    CHECK_THAT(e.what(), Catch::Contains("missing"));
  }
  CHECK_FALSE(f.is_open());
}
