#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <climits>
#include <cstring>
#include <string>

#include "arena.h"
#include "sluice/error.h"
#include "test_support.h"

using sluice::detail::Arena;

namespace {
std::string fd_target(int fd) {
  char buf[PATH_MAX] = {};
  ssize_t n = readlink(("/proc/self/fd/" + std::to_string(fd)).c_str(), buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : "";
}
}  // namespace

TEST_CASE("the arena is a memfd, shared with forked children, and leaves nothing behind", "[arena]") {
  const auto shm_before = sluice::test::dev_shm_entries();
  int fd = -1;
  {
    Arena arena(1 << 20, "sluice-test-arena");
    fd = arena.fd();
    REQUIRE(arena.size() == (1u << 20));
    REQUIRE(fd_target(fd).rfind("/memfd:sluice-test-arena", 0) == 0);
    REQUIRE(sluice::test::dev_shm_entries() == shm_before);

    std::memset(arena.base(), 0, arena.size());
    pid_t child = fork();
    if (child == 0) {
      arena.prefault_in_this_process();
      std::memcpy(arena.base() + 4096 * 7, "written by the child", 21);
      _exit(0);
    }
    int status = 0;
    REQUIRE(waitpid(child, &status, 0) == child);
    REQUIRE(WIFEXITED(status));
    REQUIRE(std::string(reinterpret_cast<char*>(arena.base() + 4096 * 7)) == "written by the child");
  }
  REQUIRE(fd_target(fd).rfind("/memfd:sluice-test-arena", 0) != 0);  // closed
  REQUIRE(sluice::test::dev_shm_entries() == shm_before);
}

TEST_CASE("an arena larger than available memory fails with a clear error, before reserving anything", "[arena]") {
  REQUIRE_THROWS_WITH(Arena(std::size_t{1} << 50, "sluice-too-big"), Catch::Contains("the arena needs") && Catch::Contains("available"));
}
