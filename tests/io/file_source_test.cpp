#include <catch2/catch.hpp>
#include <filesystem>

#include "io_test_support.h"
#include "sluice/error.h"
#include "sluice/io/file_source.h"
#include "sluice/io/glob.h"

using namespace sluice::io;
namespace fs = std::filesystem;
using Catch::Matchers::Contains;

TEST_CASE("glob: segments, ** and hidden names", "[files]") {
  CHECK(glob_match("a/*.png", "a/x.png"));
  CHECK_FALSE(glob_match("a/*.png", "a/b/x.png"));
  CHECK(glob_match("a/**/*.png", "a/x.png"));
  CHECK(glob_match("a/**/*.png", "a/b/c/x.png"));
  CHECK_FALSE(glob_match("a/**/*.png", "a/b/.hid/x.png"));
  CHECK_FALSE(glob_match("a/*", "a/.hidden"));
  CHECK(glob_match("a/[xy]?.jp*g", "a/y1.jpeg"));
}

TEST_CASE("files: an ImageNet-style tree gives labels from sorted class folders", "[files]") {
  test::TempDir tmp;
  auto root = tmp.path() / "train";
  for (const char* p : {"dog/a.jpg", "dog/sub/b.JPG", "cat/c.png", "cat/.d.png", "bird/e.txt"}) {
    fs::create_directories((root / p).parent_path());
    test::write_file((root / p).string(), test::bytes_of(p));
  }
  FolderOptions options;
  options.extensions = {"jpg", "png"};
  auto source = FileSource::from_folders(root.string(), options);
  CHECK(source->classes() == std::vector<std::string>{"bird", "cat", "dog"});
  REQUIRE(source->size() == 3);  // bird/e.txt filtered, cat/.d.png hidden
  std::vector<std::byte> buf;
  Sample s;
  read_sample(*source, 0, buf, s);
  CHECK(s.label == 1);
  CHECK(test::text_of(s.fields[0].bytes) == "cat/c.png");
  read_sample(*source, 2, buf, s);
  CHECK(s.label == 2);
  CHECK(s.path == (root / "dog/sub/b.JPG").string());
  CHECK_THROWS_WITH(FileSource::from_folders((tmp.path() / "nope").string()), Contains("not a directory"));
}

TEST_CASE("files: the pillow images by recursive glob, and a missing file", "[files]") {
  SLUICE_REQUIRE_SHARED_DATA(data);
  auto dir = (data / "images/pillow-tests").string();
  auto pngs = FileSource::from_glob(dir + "/**/*.png");
  auto top = FileSource::from_glob(dir + "/*.png");
  CHECK(pngs->size() > top->size());
  CHECK(top->size() > 100);
  std::vector<std::byte> buf;
  Sample s;
  read_sample(*pngs, 0, buf, s);
  REQUIRE(s.fields[0].bytes.size() > 8);
  CHECK(test::text_of(s.fields[0].bytes.first(4)) == "\x89PNG");
  CHECK(s.label == -1);

  auto listed = FileSource::from_list({dir + "/hopper.jpg", dir + "/no-such-file.jpg"});
  CHECK_NOTHROW(read_sample(*listed, 0, buf, s));
  CHECK_THROWS_WITH(read_sample(*listed, 1, buf, s), Contains("cannot open " + dir + "/no-such-file.jpg"));
  CHECK_THROWS_WITH(FileSource::from_glob(dir + "/*.nothing"), Contains("no file matches"));
}
