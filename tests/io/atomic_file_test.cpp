// write_file_atomically: a whole new file or the old one, never a part, and
// no temporary left behind by a failure. Real files and a real full disk
// (/dev/full) where the machine has one.
#include "sluice/io/atomic_file.h"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <unistd.h>

#include "io_test_support.h"
#include "skip.h"
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

TEST_CASE("atomic file: a full disk fails the write, not later", "[atomic_file]") {
  if (::access("/dev/full", W_OK) != 0) SKIP_TEST("/dev/full is not writable here (it makes every write fail with ENOSPC)");
  // /dev/full cannot be renamed over, but writing it is the write a full disk fails.
  sluice::io::test::TempDir dir;
  fs::create_symlink("/dev/full", dir.file("full.tmp" + std::to_string(::getpid())));
  CHECK_THROWS_WITH(write_file_atomically(dir.file("full"), std::string(1 << 20, 'y')),
                    Contains("No space left on device"));
  CHECK_FALSE(fs::exists(dir.file("full")));
  CHECK(entries(dir.path()) == 0);  // the link stood in for the temporary and went with it
}
