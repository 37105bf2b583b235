// `sluice inspect DIR`: an image folder as sluice.folders reads it, and
// `sluice inspect FILE.parquet`, through the real command line on real files.
#include <catch2/catch.hpp>

#include "skip.h"

#include <filesystem>
#include <string>

#include "support.h"

using Catch::Contains;
using sluice::test::CliResult;
using sluice::test::TempDir;

#ifdef SLUICE_CLI

TEST_CASE("sluice inspect DIR lists an image folder's classes, counts and files that are not images", "[cli]") {
  TempDir dir;  // zebra: a class with no file
  const std::string train = sluice::test::pillow_folder(
      dir, {{"cat", {"hopper.png", "hopper.jpg"}}, {"dog", {"nested/flower.jpg", "pil168.png"}}, {"zebra", {}}});
  if (train.empty()) SKIP_TEST("no real images");
  const std::filesystem::path root = train;
  dir.write("train/dog/labels.csv", "not,an,image\n");
  dir.write("train/dog/.hidden.jpg", "left out by sluice.folders");
  dir.write("train/README", "outside every class\n");

  const CliResult r = sluice::test::run_cli({"inspect", root.string()});
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.out, Contains("train: image folder (sluice.folders), 3 classes, 5 files"));
  CHECK_THAT(r.out, Contains("0      cat                      2\n"));
  CHECK_THAT(r.out, Contains("1      dog                      3\n"));
  CHECK_THAT(r.out, Contains("2      zebra                    0  (empty)"));
  CHECK_THAT(r.out, Contains("not JPEG or PNG") && Contains(": 1\n    " + (root / "dog/labels.csv").string()));
  CHECK_THAT(r.out, Contains("outside any class folder (left out): 1\n    " + (root / "README").string()));
  CHECK_THAT(r.out, !Contains(".hidden"));
}

TEST_CASE("sluice inspect DIR without class folders is an error naming the folder", "[cli]") {
  TempDir dir;
  dir.write("flat/a.jpg", "x");
  const CliResult r = sluice::test::run_cli({"inspect", dir.path() + "/flat"});
  CHECK(r.status == 1);
  CHECK_THAT(r.err, Contains("image folder " + dir.path() + "/flat: no class sub-folders"));
}

TEST_CASE("sluice inspect FILE.parquet shows the schema, row groups, codecs and rows", "[cli][parquet]") {
  const std::string data = std::string(SLUICE_IO_TEST_DATA) + "/parquet-testing/data/";
  const CliResult r = sluice::test::run_cli({"inspect", data + "datapage_v2.snappy.parquet",
                                             data + "nested_lists.snappy.parquet"});
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.out, Contains("datapage_v2.snappy.parquet: Parquet, 5 rows in 1 row group"));
  // With the writer's null counts, which say whether a read meets a null.
  CHECK_THAT(r.out, Contains("  a: BYTE_ARRAY (string) -> bytes, nullable (1 null by the writer's statistics)\n"));
  CHECK_THAT(r.out, Contains("  e: INT32 -> int32, list, nullable (2 nulls or empty lists by the writer's statistics, "
                             "which do not tell them apart: a null or empty list reads as empty, a list with a null "
                             "element is refused)\n"));
  CHECK_THAT(r.out, Contains("  0: 5 rows, 317 bytes compressed, 311 uncompressed, SNAPPY\n"));
  CHECK_THAT(r.out, Contains("[not readable: nested lists]"));
  const CliResult enc = sluice::test::run_cli({"inspect", data + "uniform_encryption.parquet.encrypted"});
  CHECK(enc.status == 1);
  CHECK_THAT(enc.err, Contains("uniform_encryption.parquet.encrypted") && Contains("encrypted"));
}

#endif
