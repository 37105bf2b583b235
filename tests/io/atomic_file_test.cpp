// write_file_atomically: a whole new file or the old one, never a part, and
// no temporary left behind by a failure. Real files and a real full disk
// (/dev/full) where the machine has one.
#include "sluice/io/atomic_file.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "io_test_support.h"
#include "sluice/error.h"

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using sluice::io::write_file_atomically;

namespace {

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::size_t entries(const fs::path& dir) {
  return static_cast<std::size_t>(std::distance(fs::directory_iterator(dir), fs::directory_iterator()));
}

}  // namespace

TEST_CASE("atomic file: replaces the file whole and leaves only it", "[atomic_file]") {
  sluice::io::test::TempDir dir;
  const std::string path = dir.file("state.json");
  write_file_atomically(path, "first\n");
  CHECK(read_all(path) == "first\n");
  const std::string big(3 << 20, 'x');  // more than one stream buffer
  write_file_atomically(path, big);
  CHECK(read_all(path) == big);
  write_file_atomically(path, "");
  CHECK(read_all(path).empty());
  CHECK(entries(dir.path()) == 1);
}

TEST_CASE("atomic file: a failure names the path, keeps the old file and leaves no temporary", "[atomic_file]") {
  sluice::io::test::TempDir dir;
  const std::string path = dir.file("keep.json");
  write_file_atomically(path, "old\n");
  // A folder in the way of the rename: the temporary is written, the rename fails.
  fs::create_directory(dir.file("folder"));
  fs::create_directory(dir.file("folder/inside"));
  CHECK_THROWS_WITH(write_file_atomically(dir.file("folder"), "new\n"),
                    Contains("cannot write " + dir.file("folder") + ": "));
  // Under a file: the temporary cannot be made (ENOTDIR).
  CHECK_THROWS_WITH(write_file_atomically(path + "/x.json", "new\n"),
                    Contains("cannot write " + path + "/x.json.tmp") && Contains("Not a directory"));
  CHECK(read_all(path) == "old\n");
  CHECK(entries(dir.path()) == 2);  // keep.json and folder: no *.tmp*
}

TEST_CASE("atomic file: a write the disk refuses fails the call and leaves nothing", "[atomic_file]") {
  // A file size limit (RLIMIT_FSIZE) makes the kernel refuse the write past
  // it (EFBIG), as a full disk refuses one (ENOSPC): in a child, whose limit
  // and ignored SIGXFSZ end with it.
  sluice::io::test::TempDir dir;
  write_file_atomically(dir.file("big"), "old\n");
  const pid_t child = ::fork();
  if (child == 0) {
    ::signal(SIGXFSZ, SIG_IGN);
    const rlimit limit{64 << 10, 64 << 10};
    if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) ::_exit(2);
    try {
      write_file_atomically(dir.file("big"), std::string(1 << 20, 'y'));
    } catch (const sluice::Error& e) {
      const bool named = std::string(e.what()).find("cannot write " + dir.file("big") + ".tmp") != std::string::npos &&
                         std::string(e.what()).find("File too large") != std::string::npos;
      ::_exit(named ? 0 : 3);
    }
    ::_exit(4);  // no error
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(read_all(dir.file("big")) == "old\n");
  CHECK(entries(dir.path()) == 1);  // no temporary left
}

TEST_CASE("atomic file: threads writing one path each rename a whole file, and a reader never sees a part",
          "[atomic_file]") {
  sluice::io::test::TempDir dir;
  const std::string path = dir.file("shared.json");
  const std::string a(100000, 'a'), b(200000, 'b');
  write_file_atomically(path, a);
  std::atomic<bool> done{false};
  std::atomic<int> errors{0}, torn{0};
  auto writer = [&](const std::string& text) {
    for (int i = 0; i < 100; ++i) {
      try {
        write_file_atomically(path, text);
      } catch (const sluice::Error&) {
        ++errors;
      }
    }
  };
  std::thread reader([&] {
    while (!done.load()) {
      const std::string got = read_all(path);
      if (got != a && got != b) ++torn;
    }
  });
  std::thread first(writer, a), second(writer, b);
  first.join();
  second.join();
  done = true;
  reader.join();
  CHECK(errors == 0);
  CHECK(torn == 0);
  CHECK(entries(dir.path()) == 1);  // no temporary left
  CHECK(sluice::io::is_atomic_temporary("manifest.json.tmp1234.7", "manifest.json"));
  CHECK(sluice::io::is_atomic_temporary("manifest.json.tmp", "manifest.json"));  // as earlier versions named it
  CHECK_FALSE(sluice::io::is_atomic_temporary("manifest.json.tmp.bak", "manifest.json"));
}
