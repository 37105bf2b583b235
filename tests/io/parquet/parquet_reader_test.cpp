// ParquetReader's own contract: rows across files and row groups, each group
// decoded once while a shuffled window wants it, the same values in any
// order (in order they stream, out of order they are interleaved), clear(),
// runs of consecutive rows copied column by column, rows gathered from a
// whole row group column by column.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <memory>
#include <numeric>
#include <random>
#include <set>

#include "parquet/byte_buffer.h"
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

namespace {

// Every row of `reader`, column by column, as read_run and copy_run give
// them where the column is dense (into slots of `stride` bytes) and as
// read() gives them everywhere: they must agree. Runs of `count` rows,
// starting at `first` rows into the table. Returns the columns read_run
// called not dense at least once.
std::set<std::size_t> check_runs(ParquetReader& reader, ParquetReader& by_row, std::uint64_t first, std::uint64_t count) {
  const std::size_t columns = reader.column_names().size();
  std::vector<ParquetColumnRun> runs(columns);
  std::vector<ParquetValue> values(columns);
  std::set<std::size_t> sparse;
  for (std::uint64_t row = first; row < reader.rows();) {
    const std::uint64_t n = reader.read_run(row, count, runs);
    REQUIRE(n >= 1);
    REQUIRE(n <= count);
    for (std::size_t c = 0; c < columns; ++c) {
      if (runs[c].data == nullptr) {
        sparse.insert(c);
        continue;
      }
      const std::size_t stride = runs[c].width + 3;  // slots wider than the value
      std::vector<std::byte> slots(n * stride, std::byte{0x5a});
      copy_run(runs[c], n, slots.data(), stride);
      for (std::uint64_t i = 0; i < n; ++i) {
        by_row.read(row + i, values);
        INFO("row " << row + i << ", column " << reader.column_names()[c]);
        REQUIRE(values[c].bytes == runs[c].width);
        CHECK(std::memcmp(slots.data() + i * stride, values[c].data, values[c].bytes) == 0);
        CHECK(slots[i * stride + runs[c].width] == std::byte{0x5a});
      }
    }
    row += n;
  }
  return sparse;
}

}  // namespace

TEST_CASE("parquet reader: runs of consecutive rows equal rows read one by one, columns with nulls not dense",
          "[parquet]") {
  SECTION("five row groups, runs cut at their ends") {
    auto file = std::make_shared<const ParquetFile>(corpus("data/floating_orders_nan_count.parquet"));
    ParquetReader reader({file, file}, {}), by_row({file, file}, {});
    std::vector<ParquetColumnRun> runs(reader.column_names().size());
    CHECK(reader.read_run(3, 100, runs) == 7);  // the first group holds rows 0-9
    CHECK(reader.read_run(3, 0, runs) == 0);
    for (std::uint64_t count : {1u, 4u, 10u, 64u}) CHECK(check_runs(reader, by_row, 0, count).empty());
    CHECK(check_runs(reader, by_row, 7, 6).empty());
    CHECK_THROWS_WITH(reader.read_run(reader.rows(), 1, runs), Catch::Matchers::Contains("past the"));
  }
  SECTION("a group read out of order first (interleaved), then in runs") {
    auto file = std::make_shared<const ParquetFile>(corpus("data/alltypes_tiny_pages_plain.parquet"));
    ParquetReader reader({file}, {}), by_row({file}, {});
    std::vector<ParquetValue> values(reader.column_names().size());
    for (std::uint64_t r : {500ull, 3ull, 7000ull, 2ull}) reader.read(r, values);
    const std::set<std::size_t> sparse = check_runs(reader, by_row, 0, 256);
    // Its two string columns are the only ones not dense.
    for (std::size_t c : sparse) CHECK(reader.column_infos()[c].physical == "BYTE_ARRAY");
    CHECK(sparse.size() == 2);
  }
  SECTION("an int32 column with null pages is read row by row") {
    auto file = std::make_shared<const ParquetFile>(corpus("data/int32_with_null_pages.parquet"));
    ParquetReader reader({file}, {}), by_row({file}, {});
    CHECK(check_runs(reader, by_row, 0, 256) == std::set<std::size_t>{0});
  }
}

TEST_CASE("parquet reader: rows gathered from a whole row group equal rows read one by one", "[parquet]") {
  // Two files of five groups of 10 rows (cached_row_groups = 2), and a table
  // of 7300 rows whose string columns are not dense; rows in a shuffled
  // order, gathered group by group into slots wider than the value.
  for (const char* name : {"data/floating_orders_nan_count.parquet", "data/alltypes_tiny_pages_plain.parquet"}) {
    INFO(name);
    auto file = std::make_shared<const ParquetFile>(corpus(name));
    ParquetReader reader({file, file}, {}, {.cached_row_groups = 2}), by_row({file, file}, {});
    const std::size_t columns = reader.column_names().size();
    std::vector<std::uint64_t> order(reader.rows());
    std::iota(order.begin(), order.end(), 0);
    std::mt19937_64 rng(11);
    std::shuffle(order.begin(), order.end(), rng);
    order.resize(std::min<std::size_t>(order.size(), 300));
    std::vector<ParquetColumnRun> runs(columns);
    std::vector<ParquetValue> values(columns);
    std::vector<bool> done(order.size(), false);
    std::size_t gathered = 0, dense = 0;
    for (std::size_t first = 0; first < order.size(); ++first) {
      if (done[first]) continue;
      const auto [begin, end] = reader.read_group(order[first], runs);
      REQUIRE(begin <= order[first]);
      REQUIRE(order[first] < end);
      std::vector<std::uint64_t> rows;
      std::vector<std::uint32_t> at;
      for (std::size_t j = first; j < order.size(); ++j) {
        if (done[j] || order[j] < begin || order[j] >= end) continue;
        rows.push_back(order[j] - begin);
        at.push_back(static_cast<std::uint32_t>(j));
        done[j] = true;
      }
      gathered += rows.size();
      for (std::size_t c = 0; c < columns; ++c) {
        if (runs[c].data == nullptr) continue;
        ++dense;
        const std::size_t stride = runs[c].width + 3;
        std::vector<std::byte> slots(order.size() * stride, std::byte{0x5a});
        gather_rows(runs[c], rows, at, slots.data(), stride);
        for (std::size_t i = 0; i < rows.size(); ++i) {
          by_row.read(order[at[i]], values);
          INFO("row " << order[at[i]] << ", column " << reader.column_names()[c]);
          REQUIRE(values[c].bytes == runs[c].width);
          CHECK(std::memcmp(slots.data() + at[i] * stride, values[c].data, values[c].bytes) == 0);
          CHECK(slots[at[i] * stride + runs[c].width] == std::byte{0x5a});
        }
      }
    }
    CHECK(gathered == order.size());
    CHECK(dense > 0);
  }
}

TEST_CASE("parquet reader: whole rows gathered through joined runs equal rows read one by one", "[parquet]") {
  // The group's interleaved columns joined into runs as wide as the
  // columns side by side (join_runs), each gathered with one copy a row into
  // slots that hold every selected column side by side: rows in a shuffled
  // order and in order, string columns (never joined, their place in the
  // slot untouched) mixed with dense ones, and column selections whose
  // joined width is 16, 32 and 64 bytes (gather_rows' wide cases) and others.
  auto file = std::make_shared<const ParquetFile>(corpus("data/alltypes_tiny_pages_plain.parquet"));
  const std::vector<std::vector<std::string>> selections = {
      {},  // every column, strings among them
      {"id", "int_col", "year", "month"},
      {"bigint_col", "double_col", "id", "int_col", "year", "month", "float_col", "smallint_col"},
      {"bigint_col", "double_col", "timestamp_col", "bigint_col", "double_col", "id", "int_col", "year", "month",
       "float_col", "id"},
      {"bigint_col", "double_col", "id", "int_col", "year", "month", "float_col", "smallint_col", "bigint_col",
       "double_col", "timestamp_col", "tinyint_col", "id", "int_col", "year", "month"},
      {"string_col", "id", "int_col", "year", "month", "date_string_col", "bigint_col"},
  };
  std::set<std::size_t> widths;
  for (const auto& names : selections) {
    ParquetReader reader({file}, names), by_row({file}, names);
    const std::size_t columns = reader.column_names().size();
    std::vector<std::size_t> offset(columns + 1, 0);
    for (std::size_t c = 0; c < columns; ++c) {
      std::vector<ParquetColumnRun> probe(columns);
      reader.read_run(0, 1, probe);
      offset[c + 1] = offset[c] + probe[c].width;
    }
    const std::size_t slot = offset[columns] + 5;  // wider than the row
    for (const bool shuffled : {true, false}) {
      INFO("columns " << columns << (shuffled ? ", shuffled" : ", in order"));
      std::vector<std::uint64_t> order(reader.rows());
      std::iota(order.begin(), order.end(), 0);
      if (shuffled) {
        std::mt19937_64 rng(5);
        std::shuffle(order.begin(), order.end(), rng);
      }
      order.resize(std::min<std::size_t>(order.size(), 700));
      reader.clear();
      std::vector<ParquetColumnRun> runs(columns), joined;
      std::vector<ParquetValue> values(columns);
      std::vector<std::byte> slots(order.size() * slot, std::byte{0x5a});
      std::vector<std::uint64_t> rows;
      std::vector<std::uint32_t> at;
      const auto [begin, end] = reader.read_group(order[0], runs);
      for (std::size_t j = 0; j < order.size(); ++j) {
        if (order[j] < begin || order[j] >= end) continue;
        rows.push_back(order[j] - begin);
        at.push_back(static_cast<std::uint32_t>(j));
      }
      REQUIRE(rows.size() > 1);
      joined = runs;
      const std::size_t count = join_runs(joined);
      REQUIRE(count >= 1);
      REQUIRE(count <= columns);
      // Each joined run starts with column c (its place in the slot) and
      // spans the columns whose widths it sums.
      std::size_t c = 0;
      for (std::size_t k = 0; k < count; ++k) {
        REQUIRE(joined[k].data == runs[c].data);
        std::size_t end_c = c, width = 0;
        while (end_c < columns && width < joined[k].width) width += runs[end_c++].width;
        REQUIRE(width == joined[k].width);
        if (joined[k].data != nullptr) {
          widths.insert(joined[k].width);
          gather_rows(joined[k], rows, at, slots.data() + offset[c], slot);
        }
        c = end_c;
      }
      REQUIRE(c == columns);
      for (std::size_t i = 0; i < rows.size(); ++i) {
        by_row.read(order[at[i]], values);
        const std::byte* row = slots.data() + at[i] * slot;
        for (std::size_t col = 0; col < columns; ++col) {
          INFO("row " << order[at[i]] << ", column " << reader.column_names()[col]);
          if (runs[col].data == nullptr) {  // a string: left for read()
            for (std::size_t b = offset[col]; b < offset[col + 1]; ++b) REQUIRE(row[b] == std::byte{0x5a});
            continue;
          }
          REQUIRE(values[col].bytes == runs[col].width);
          CHECK(std::memcmp(row + offset[col], values[col].data, values[col].bytes) == 0);
        }
        CHECK(row[offset[columns]] == std::byte{0x5a});
      }
    }
  }
  for (std::size_t w : {16u, 32u, 64u}) {
    INFO("joined width " << w);
    CHECK(widths.count(w) == 1);
  }
  CHECK(widths.size() > 3);
}

TEST_CASE("parquet reader: 4-byte columns side by side interleave to the rows read in order", "[parquet]") {
  // Interleaving moves four 4-byte columns side by side four rows at a
  // time: every 4-byte column selected five times (spans of four and the
  // rest), in groups of 10 rows (rows left after the fours) and of 7300.
  for (const char* name : {"data/floating_orders_nan_count.parquet", "data/alltypes_tiny_pages_plain.parquet"}) {
    INFO(name);
    auto file = std::make_shared<const ParquetFile>(corpus(name));
    ParquetReader all({file}, {});
    std::vector<std::string> names;
    std::vector<ParquetColumnRun> probe(all.column_names().size());
    all.read_run(0, 1, probe);
    for (std::size_t c = 0; c < probe.size(); ++c)
      if (probe[c].data != nullptr && probe[c].width == 4)
        for (int k = 0; k < 5; ++k) names.push_back(all.column_names()[c]);
    REQUIRE(names.size() >= 5);
    ParquetReader forward({file}, names), backward({file}, names);
    std::vector<std::vector<std::string>> in_order;
    for (std::uint64_t r = 0; r < file->rows(); ++r) in_order.push_back(row_text(forward, r));
    for (std::uint64_t r = file->rows(); r-- > 0;) {
      INFO("row " << r);
      REQUIRE(row_text(backward, r) == in_order[r]);
    }
  }
}

TEST_CASE("parquet reader's buffers: grown past huge-page size they keep their bytes and alignment", "[parquet]") {
  // A decoded group's buffer of 4 MiB or more is 2 MiB aligned (asked for
  // huge pages); smaller ones start on a cache line; growing keeps the bytes.
  sluice::io::parquet::ByteBuffer buffer;
  buffer.resize(1000);
  for (std::size_t i = 0; i < buffer.size(); ++i) buffer.data()[i] = static_cast<std::byte>(i * 7);
  CHECK(reinterpret_cast<std::uintptr_t>(buffer.data()) % sluice::io::parquet::ByteBuffer::kAlign == 0);
  const std::size_t big = 9 * (std::size_t{1} << 20) + 13;
  buffer.resize(big);
  CHECK(reinterpret_cast<std::uintptr_t>(buffer.data()) % sluice::io::parquet::ByteBuffer::kHuge == 0);
  for (std::size_t i = 0; i < 1000; ++i) REQUIRE(buffer.data()[i] == static_cast<std::byte>(i * 7));
  buffer.data()[big - 1] = std::byte{0x42};  // the last byte is ours
  std::byte* at = buffer.data();
  buffer.clear();
  buffer.resize(big);  // capacity kept: no new allocation
  CHECK(buffer.data() == at);
  CHECK(buffer.data()[big - 1] == std::byte{0x42});
  buffer.resize(big * 2);
  CHECK(buffer.data()[999] == static_cast<std::byte>(999 * 7));
  CHECK(buffer.data()[big - 1] == std::byte{0x42});
}
