// Parquet files from independent writers (DuckDB; arrow-rs through
// parquet-wasm), every codec, page version and encoding they write, read by
// Sluice and compared value by value with what DuckDB reads back from the
// same files (tests/io/parquet/oracle.mjs writes both). The npm packages are
// installed from tests/npm into the build directory; without node, npm or
// the registry the test is skipped, saying why.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include "parquet_test_support.h"
#include "skip.h"
#include "sluice/error.h"
#include "sluice/io/parquet.h"

using namespace sluice;
using namespace sluice::io;
namespace fs = std::filesystem;
using Catch::Matchers::Contains;

namespace {

int shell(const std::string& command) { return std::system(command.c_str()); }

// The oracle's files, made once per build directory; "" with the reason in
// `why` when they cannot be. Test processes that CTest runs at once take
// turns on a lock: the first makes the files, the others then find them.
std::string oracle_files(std::string& why) {
  const fs::path npm = SLUICE_TEST_NPM_DIR;
  const fs::path out = npm / "parquet-oracle";
  // Made whole by an earlier run; one made before oracle.mjs wrote
  // refused_shapes.parquet lacks it, and is made again.
  auto whole = [&] { return fs::exists(out / "manifest.txt") && fs::exists(out / "refused_shapes.parquet"); };
  if (whole()) return out.string();
  if (shell("command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1") != 0) {
    why = "node and npm are not installed";
    return "";
  }
  if (shell("bash '" + (fs::path(SLUICE_TEST_NPM_PACKAGE) / "install.sh").string() + "' '" + npm.string() + "'") != 0) {
    why = "npm install failed (no registry?); see " + (npm / "install.log").string();
    return "";
  }
  const int lock = ::open((npm / ".oracle.lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  REQUIRE(lock >= 0);
  struct Unlock {
    int fd;
    ~Unlock() { ::close(fd); }  // releases the flock
  } unlock{lock};
  REQUIRE(::flock(lock, LOCK_EX) == 0);
  if (whole()) return out.string();  // made by another test process while this one waited
  // ES modules resolve packages from the script's own folder.
  fs::copy_file(fs::path(SLUICE_TEST_PARQUET_DIR) / "oracle.mjs", npm / "oracle.mjs",
                fs::copy_options::overwrite_existing);
  const fs::path partial = npm / "parquet-oracle.partial";
  fs::remove_all(partial);
  if (shell("node '" + (npm / "oracle.mjs").string() + "' '" + partial.string() + "' >'" +
            (npm / "oracle.log").string() + "' 2>&1") != 0) {
    std::ifstream log(npm / "oracle.log");
    std::stringstream s;
    s << log.rdbuf();
    FAIL("the oracle script failed: " << s.str());
  }
  fs::remove_all(out);
  fs::rename(partial, out);
  return out.string();
}

std::string hex(const std::string& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) out += digits[c >> 4], out += digits[c & 15];
  return out;
}

// Sluice's value (rendered) equals DuckDB's (as text): floats as numbers,
// decimals the double nearest DuckDB's exact text, UUIDs as hex, a null
// string <null> on both sides.
bool same(const std::string& ours, const std::string& theirs, const ParquetColumnInfo& info) {
  if (ours.empty() || theirs.empty()) return ours.empty() && theirs.empty();
  if (info.logical == "uuid") return hex(ours) == theirs;
  if (info.dtype == DType::f32) return std::strtof(ours.c_str(), nullptr) == std::strtof(theirs.c_str(), nullptr);
  if (info.dtype == DType::f64) return std::strtod(ours.c_str(), nullptr) == std::strtod(theirs.c_str(), nullptr);
  return ours == theirs;
}

}  // namespace

TEST_CASE("parquet oracle: DuckDB and arrow-rs files, every codec and encoding, equal DuckDB's reading", "[parquet]") {
  std::string why;
  const std::string dir = oracle_files(why);
  if (dir.empty()) SKIP_TEST(why);
  std::ifstream manifest(dir + "/manifest.txt");
  std::string name, expected;
  std::size_t files = 0;
  while (manifest >> name >> expected) {
    INFO(name);
    const auto csv = sluice::test::read_csv(dir + "/" + expected + ".csv");
    REQUIRE(csv.size() > 1);
    auto file = std::make_shared<ParquetFile>(dir + "/" + name + ".parquet");
    ParquetReader reader({file}, csv[0]);
    REQUIRE(reader.rows() == csv.size() - 1);
    std::vector<ParquetValue> values(csv[0].size());
    std::size_t mismatches = 0;
    for (std::uint64_t r = 0; r < reader.rows(); ++r) {
      reader.read(r, values);
      for (std::size_t c = 0; c < values.size(); ++c) {
        const bool null_bytes = !reader.column_infos()[c].dtype && values[c].data == nullptr;
        const std::string ours = null_bytes ? "<null>" : sluice::test::render(values[c], reader.column_infos()[c]);
        if (!same(ours, csv[r + 1][c], reader.column_infos()[c]) && ++mismatches <= 5)
          FAIL_CHECK("row " << r << " column " << csv[0][c] << ": Sluice '" << ours << "', DuckDB '" << csv[r + 1][c]
                            << "'");
      }
    }
    CHECK(mismatches == 0);
    ++files;
  }
  CHECK(files >= 30);
}

TEST_CASE("parquet oracle: structs in lists and a name two columns share are refused, never read apart", "[parquet]") {
  std::string why;
  const std::string dir = oracle_files(why);
  if (dir.empty()) SKIP_TEST(why);
  const std::string path = dir + "/refused_shapes.parquet";
  auto file = std::make_shared<ParquetFile>(path);
  // [{y, z}, ...] and [{y}]: each field of the element would read as a list of its own.
  for (const char* list : {"pairs", "singles"}) {
    INFO(list);
    CHECK_THROWS_WITH(ParquetReader({file}, {list}), Contains(path) && Contains("column '" + std::string(list) + "'") &&
                                                          Contains("structs nested in lists are not supported"));
  }
  CHECK_THROWS_WITH(ParquetReader({file}, {}), Contains("structs nested in lists are not supported"));
  // st.a is both the field a of the struct st and a column named "st.a".
  CHECK_THROWS_WITH(ParquetReader({file}, {"st.a"}),
                    Contains(path) && Contains("the column name 'st.a' names the field 'a' of 'st' and a column named 'st.a'"));
  // The columns around them read as ever.
  ParquetReader ids({file}, {"id"});
  std::vector<ParquetValue> v(1);
  ids.read(7, v);
  CHECK(sluice::test::render(v[0], ids.column_infos()[0]) == "7");
}
