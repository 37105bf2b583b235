#include <catch2/catch.hpp>

#include "skip.h"

#include <cstdint>
#include <cstring>
#include <string>

#include "buffer.h"
#include "sluice/error.h"

using sluice::ops::Buffer;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

TEST_CASE("a Buffer that cannot grow keeps its old block, and the error names the file and the size") {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  SKIP_TEST("the sanitizers' allocators abort on an allocation of this size instead of throwing");
#endif
  Buffer buffer;
  std::byte* old = buffer.reserve(4096, "small.jpg");
  REQUIRE(old != nullptr);
  std::memset(old, 0x5a, 4096);
  const std::size_t huge = SIZE_MAX / 2;
  CHECK_THROWS_WITH(buffer.reserve(huge, "huge.jpg"),
                    StartsWith("huge.jpg: ") && Contains(std::to_string(huge) + " bytes"));
  CHECK(buffer.data() == old);
  CHECK(buffer.capacity() == 4096);
  for (int i = 0; i < 4096; ++i) REQUIRE(old[i] == std::byte{0x5a});
  // Still usable: within capacity it hands back the same block, and it grows.
  CHECK(buffer.reserve(4096, "next.jpg") == old);
  std::byte* grown = buffer.reserve(1 << 20, "bigger.jpg");
  REQUIRE(grown != nullptr);
  CHECK(buffer.capacity() == (1 << 20));
  grown[(1 << 20) - 1] = std::byte{1};
}
