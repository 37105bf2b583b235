// ParquetReader's own contract: rows across files and row groups, each group
// decoded once while a shuffled window wants it, the same values in any
// order (in order they stream, out of order they are interleaved), clear().
#include <catch2/catch.hpp>

#include <algorithm>
#include <memory>
#include <numeric>
#include <random>

#include "parquet_test_support.h"
#include "sluice/error.h"
#include "sluice/io/parquet.h"

using namespace sluice::io;
using sluice::test::corpus;
using sluice::test::render;

namespace {

std::vector<std::string> row_text(ParquetReader& reader, std::uint64_t row) {
  std::vector<ParquetValue> values(reader.column_names().size());
  reader.read(row, values);
  std::vector<std::string> out;
  for (std::size_t c = 0; c < values.size(); ++c) out.push_back(render(values[c], reader.column_infos()[c]));
  return out;
}

}  // namespace

TEST_CASE("parquet reader: a window-shuffled order decodes each row group once, across files", "[parquet]") {
  auto file = std::make_shared<const ParquetFile>(corpus("data/floating_orders_nan_count.parquet"));
  REQUIRE(file->row_groups().size() == 5);
  const std::uint64_t per_file = file->rows();
  ParquetReader in_order({file}, {});
  std::vector<std::vector<std::string>> expected;
  for (std::uint64_t r = 0; r < per_file; ++r) expected.push_back(row_text(in_order, r));
  CHECK(in_order.groups_decoded() == 5);

  ParquetReader reader({file, file}, {}, {.cached_row_groups = 2});
  REQUIRE(reader.rows() == 2 * per_file);
  CHECK(reader.locate(per_file + 3) == std::make_pair(std::size_t{1}, std::uint64_t{3}));
  // Groups two at a time, rows shuffled within each pair.
  std::vector<std::uint64_t> order(reader.rows());
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 rng(5);
  const std::uint64_t group = per_file / 5;
  for (std::uint64_t at = 0; at < order.size(); at += 2 * group)
    std::shuffle(order.begin() + static_cast<std::ptrdiff_t>(at),
                 order.begin() + static_cast<std::ptrdiff_t>(std::min<std::uint64_t>(at + 2 * group, order.size())), rng);
  for (std::uint64_t row : order) {
    reader.prefetch(row);
    CHECK(row_text(reader, row) == expected[row % per_file]);
  }
  CHECK(reader.groups_decoded() == 10);
  reader.clear();
  row_text(reader, 0);
  CHECK(reader.groups_decoded() == 11);
  std::vector<ParquetValue> one(1);
  CHECK_THROWS_WITH(reader.read(reader.rows(), one), Catch::Matchers::Contains("past the"));
}

TEST_CASE("parquet reader: rows read out of order equal rows read in order (interleaved columns)", "[parquet]") {
  auto file = std::make_shared<const ParquetFile>(corpus("data/alltypes_tiny_pages_plain.parquet"));
  ParquetReader forward({file}, {}), backward({file}, {});
  std::vector<std::vector<std::string>> in_order;
  for (std::uint64_t r = 0; r < file->rows(); ++r) in_order.push_back(row_text(forward, r));
  for (std::uint64_t r = file->rows(); r-- > 0;) {
    INFO("row " << r);
    REQUIRE(row_text(backward, r) == in_order[r]);
  }
  // And a reader that switches from streaming to random access mid-group.
  ParquetReader mixed({file}, {});
  for (std::uint64_t r = 0; r < 100; ++r) row_text(mixed, r);
  for (std::uint64_t r : {5000ull, 17ull, 7299ull, 100ull}) CHECK(row_text(mixed, r) == in_order[r]);
}
