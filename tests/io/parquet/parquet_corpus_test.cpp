// The apache/parquet-testing corpus (tests/io/data/parquet-testing, commit
// 1a2a751): every file of data/ is read with the values the corpus documents
// or refused by name, every file of bad_data/ refused with a clear error.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>

#include "../io_test_support.h"
#include "parquet_test_support.h"
#include "sluice/error.h"
#include "sluice/io/parquet.h"

using namespace sluice;
using namespace sluice::io;
using sluice::test::corpus;
using sluice::test::read_csv;
using sluice::test::read_table;
using Catch::Matchers::Contains;

namespace {

// Reads every row of every column of `path`; "" if that works, else the error.
std::string read_everything(const std::string& path) {
  try {
    auto file = std::make_shared<ParquetFile>(path);
    ParquetReader reader({file}, {});
    std::vector<ParquetValue> values(reader.column_names().size());
    for (std::uint64_t r = 0; r < reader.rows(); ++r) reader.read(r, values);
    return "";
  } catch (const Error& e) {
    return e.what();
  }
}

// What reading all of a data/ file says, where Sluice refuses it: the
// feature named. Files not listed are read whole.
const std::map<std::string, std::string> kRefused = {
    {"datapage_v1-corrupt-checksum.parquet", "page CRC mismatch"},
    {"rle-dict-uncompressed-corrupt-checksum.parquet", "page CRC mismatch"},
    {"incorrect_map_schema.parquet", "maps are not supported"},
    {"large_string_map.brotli.parquet", "maps are not supported"},
    {"map_no_value.parquet", "maps are not supported"},
    {"nested_maps.snappy.parquet", "maps are not supported"},
    {"nullable.impala.parquet", "are not supported"},
    {"nonnullable.impala.parquet", "are not supported"},
    {"list_columns.parquet", "lists of byte arrays are not supported"},
    {"old_list_structure.parquet", "nested lists are not supported"},
    {"nested_lists.snappy.parquet", "nested lists are not supported"},
    {"repeated_no_annotation.parquet", "structs nested in lists are not supported"},
    {"repeated_primitive_no_list.parquet", "lists of byte arrays are not supported"},
    {"nation.dict-malformed.parquet", "runs past its column chunk"},
};

}  // namespace

TEST_CASE("parquet corpus: every data/ file is read, or refused naming what it lacks", "[parquet]") {
  std::size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(corpus("data"))) {
    const std::string name = entry.path().filename().string();
    const bool encrypted = name.ends_with(".parquet.encrypted");
    if (!name.ends_with(".parquet") && !encrypted) continue;
    ++files;
    INFO(name);
    const std::string error = read_everything(entry.path().string());
    if (encrypted) {
      CHECK_THAT(error, Contains("encrypted") && Contains(name));
    } else if (auto it = kRefused.find(name); it != kRefused.end()) {
      CHECK_THAT(error, Contains(it->second) && Contains(name));
    } else {
      CHECK(error == "");
    }
  }
  CHECK(files >= 60);
}

TEST_CASE("parquet corpus: a refused column names the file, the column and the feature", "[parquet]") {
  const std::string path = corpus("data/list_columns.parquet");
  auto file = std::make_shared<ParquetFile>(path);
  ParquetReader reader({file}, {"int64_list"});
  std::vector<ParquetValue> v(1);
  CHECK_THROWS_WITH(reader.read(0, v), Contains(path) && Contains("column 'int64_list'") &&
                                           Contains("null elements inside lists"));
  CHECK_THROWS_WITH(ParquetReader({std::make_shared<ParquetFile>(corpus("data/nested_lists.snappy.parquet"))}, {"a"}),
                    Contains("nested_lists.snappy.parquet") && Contains("column 'a'") && Contains("nested lists"));
  CHECK_THROWS_WITH(ParquetReader({file}, {"nope"}), Contains("no column 'nope'") && Contains("int64_list"));
}

TEST_CASE("parquet corpus: a map or struct named as one column is refused as what it is", "[parquet]") {
  // Named by the name every other tool shows (not a leaf's path): the file,
  // the column and the feature, never "no column".
  auto maps = std::make_shared<ParquetFile>(corpus("data/nested_maps.snappy.parquet"));
  CHECK_THROWS_WITH(ParquetReader({maps}, {"b", "a"}), Contains("nested_maps.snappy.parquet") &&
                                                           Contains("column 'a' is a map") &&
                                                           Contains("maps are not supported"));
  auto impala = std::make_shared<ParquetFile>(corpus("data/nullable.impala.parquet"));
  CHECK_THROWS_WITH(ParquetReader({impala}, {"int_map"}),
                    Contains("nullable.impala.parquet") && Contains("column 'int_map' is a map") &&
                        Contains("maps are not supported"));
  // A struct: its fields are columns of their own, and the error names them.
  CHECK_THROWS_WITH(ParquetReader({std::make_shared<ParquetFile>(corpus("data/nulls.snappy.parquet"))}, {"b_struct"}),
                    Contains("nulls.snappy.parquet") && Contains("column 'b_struct' is a struct") &&
                        Contains("structs are not supported") && Contains("columns = { 'b_struct.b_c_int' }"));
  CHECK_THROWS_WITH(ParquetReader({impala}, {"nested_struct"}),
                    Contains("column 'nested_struct' is a struct") && Contains("'nested_struct.A'"));
  // In a later file too.
  auto plain = std::make_shared<ParquetFile>(corpus("data/datapage_v2.snappy.parquet"));
  CHECK_THROWS_WITH(ParquetReader({plain, maps}, {"b", "a"}),
                    Contains("nested_maps.snappy.parquet") && Contains("column 'a' is a map"));
}

TEST_CASE("parquet corpus: files read together without a selection have the same columns, in either order",
          "[parquet]") {
  // datapage_v2 has a, b, c, d, e; alltypes_plain id, bool_col, ...: the
  // error names both files and what each lacks.
  auto five = std::make_shared<ParquetFile>(corpus("data/datapage_v2.snappy.parquet"));
  auto plain = std::make_shared<ParquetFile>(corpus("data/alltypes_plain.parquet"));
  CHECK_THROWS_WITH(ParquetReader({plain, five}, {}),
                    Contains("columns differ") && Contains("datapage_v2.snappy.parquet lacks 'id', 'bool_col'") &&
                        Contains("which " + plain->path() + " has") &&
                        Contains("datapage_v2.snappy.parquet has 'a', 'b', 'c', 'd', 'e', which") &&
                        Contains("columns = {...} selects the ones they share"));
  CHECK_THROWS_WITH(ParquetReader({five, plain}, {}),
                    Contains("columns differ") && Contains("alltypes_plain.parquet lacks 'a'") &&
                        Contains("alltypes_plain.parquet has 'id'") && Contains("datapage_v2.snappy.parquet"));
  // One file's columns a subset of the other's (alltypes_tiny_pages adds
  // year and month): refused in either order, never narrowed to the first's.
  auto more = std::make_shared<ParquetFile>(corpus("data/alltypes_tiny_pages.parquet"));
  CHECK_THROWS_WITH(ParquetReader({plain, more}, {}),
                    Contains("alltypes_tiny_pages.parquet has 'year', 'month', which " + plain->path() + " lacks"));
  CHECK_THROWS_WITH(ParquetReader({more, plain}, {}),
                    Contains(plain->path() + " lacks 'year', 'month', which") &&
                        Contains("alltypes_tiny_pages.parquet"));
  CHECK_NOTHROW(ParquetReader({plain, std::make_shared<ParquetFile>(corpus("data/alltypes_dictionary.parquet"))}, {}));
  // The same name with another type: both types, and nothing after the last.
  auto impala = std::make_shared<ParquetFile>(corpus("data/nullable.impala.parquet"));
  CHECK_THROWS_WITH(ParquetReader({plain, impala}, {"id"}),
                    Catch::Matchers::EndsWith("nullable.impala.parquet: column 'id' is INT64, in " + plain->path() +
                                              " it is INT32"));
}

TEST_CASE("parquet corpus: every bad_data/ file is refused with a clear error", "[parquet]") {
  // ARROW-GH-43605 is valid Parquet (dictionary indices of bit width 0 with a
  // one-value dictionary; it crashed one reader): it is read.
  std::size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(corpus("bad_data"))) {
    const std::string name = entry.path().filename().string();
    if (!name.ends_with(".parquet")) continue;
    ++files;
    INFO(name);
    const std::string error = read_everything(entry.path().string());
    if (name == "ARROW-GH-43605.parquet") {
      CHECK(error == "");
      continue;
    }
    CHECK_THAT(error, Contains(name));
    CHECK(error.size() > name.size() + 10);
  }
  CHECK(files == 8);
}

TEST_CASE("parquet corpus: alltypes (Impala, PLAIN, dictionary, snappy, tiny pages) values", "[parquet]") {
  const auto plain = read_table(corpus("data/alltypes_plain.parquet"));
  REQUIRE(plain.rows.size() == 8);
  REQUIRE(plain.names.size() == 11);
  const char* ids[] = {"4", "5", "6", "7", "2", "3", "0", "1"};
  for (std::size_t r = 0; r < 8; ++r) {
    INFO("row " << r);
    const auto& row = plain.rows[r];
    CHECK(row[0] == ids[r]);
    CHECK(row[1] == (r % 2 == 0 ? "true" : "false"));
    CHECK(row[2] == (r % 2 == 0 ? "0" : "1"));
    CHECK(row[5] == (r % 2 == 0 ? "0" : "10"));
    CHECK(row[6] == (r % 2 == 0 ? "0" : "1.1000000238418579"));
    CHECK(row[7] == (r % 2 == 0 ? "0" : "10.1"));
    CHECK(row[9] == (r % 2 == 0 ? "0" : "1"));
  }
  CHECK(plain.rows[0][8] == "03/01/09");
  CHECK(plain.rows[0][10] == "1235865600000000");  // 2009-03-01 00:00 as microseconds
  CHECK(plain.rows[7][10] == "1230768060000000");  // 2009-01-01 00:01
  const auto dict = read_table(corpus("data/alltypes_dictionary.parquet"));
  REQUIRE(dict.rows.size() == 2);
  CHECK(dict.rows[1] == plain.rows[7]);
  const auto snappy = read_table(corpus("data/alltypes_plain.snappy.parquet"));
  REQUIRE(snappy.rows.size() == 2);
  CHECK(snappy.rows[0][0] == "6");
  CHECK(snappy.rows[1][0] == "7");
  // The same 7300 rows in many tiny pages, dictionary-encoded and PLAIN.
  const auto tiny = read_table(corpus("data/alltypes_tiny_pages.parquet"));
  const auto tiny_plain = read_table(corpus("data/alltypes_tiny_pages_plain.parquet"));
  REQUIRE(tiny.rows.size() == 7300);
  CHECK(tiny.rows == tiny_plain.rows);
}

TEST_CASE("parquet corpus: delta encodings equal their documented CSV", "[parquet]") {
  for (const char* stem : {"delta_binary_packed", "delta_byte_array", "delta_encoding_optional_column",
                           "delta_encoding_required_column"}) {
    INFO(stem);
    const auto table = read_table(corpus(std::string("data/") + stem + ".parquet"));
    const auto csv = read_csv(corpus(std::string("data/") + stem + "_expect.csv"));
    REQUIRE(csv.size() == table.rows.size() + 1);
    REQUIRE(csv[0].size() == table.names.size());
    for (std::size_t r = 0; r < table.rows.size(); ++r) {
      INFO("row " << r);
      CHECK(table.rows[r] == csv[r + 1]);
    }
  }
}

TEST_CASE("parquet corpus: BYTE_STREAM_SPLIT columns equal their PLAIN twins", "[parquet]") {
  const auto t = read_table(corpus("data/byte_stream_split_extended.gzip.parquet"));
  REQUIRE(t.names.size() == 14);
  REQUIRE(t.rows.size() == 200);
  for (std::size_t c = 0; c < t.names.size(); c += 2) {
    INFO(t.names[c]);
    for (const auto& row : t.rows) CHECK(row[c] == row[c + 1]);
  }
  const auto z = read_table(corpus("data/byte_stream_split.zstd.parquet"));
  REQUIRE(z.rows.size() == 300);
}

TEST_CASE("parquet corpus: LZ4 (Hadoop, raw, older framing), decimals, INT96, float16", "[parquet]") {
  const std::vector<std::vector<std::string>> lz4 = {{"1593604800", "abc", "42"},
                                                     {"1593604800", "def", "7.7000000000000002"},
                                                     {"1593604801", "abc", "42.125"},
                                                     {"1593604801", "def", "7.7000000000000002"}};
  for (const char* name : {"hadoop_lz4_compressed", "non_hadoop_lz4_compressed", "lz4_raw_compressed"}) {
    INFO(name);
    CHECK(read_table(corpus(std::string("data/") + name + ".parquet")).rows == lz4);
  }
  const auto larger = read_table(corpus("data/lz4_raw_compressed_larger.parquet"));
  REQUIRE(larger.rows.size() == 10000);
  CHECK(larger.rows[0][0] == "c7ce6bef-d5b0-4863-b199-8ea8c7fb117b");
  CHECK(read_table(corpus("data/hadoop_lz4_compressed_larger.parquet")).rows == larger.rows);

  for (const char* name : {"int32_decimal", "int64_decimal", "fixed_length_decimal", "fixed_length_decimal_legacy",
                           "byte_array_decimal"}) {
    INFO(name);
    const auto t = read_table(corpus(std::string("data/") + name + ".parquet"));
    REQUIRE(t.rows.size() == 24);
    for (std::size_t r = 0; r < 24; ++r) CHECK(t.rows[r][0] == std::to_string(r + 1));
  }
  // As microseconds since the epoch, documented in int96_from_spark.md.
  const auto spark = read_table(corpus("data/int96_from_spark.parquet"));
  const std::vector<std::vector<std::string>> micros = {
      {"1704141296123456"}, {"1704070800000000"}, {"253402225200000000"}, {"1735599600000000"}, {""},
      {"9089380393200000000"}};
  CHECK(spark.rows == micros);
  // null, 1.0, -2.0, NaN, 0.0, -1.0, -0.0, 2.0 as float16 bits.
  const auto f16 = read_table(corpus("data/float16_nonzeros_and_nans.parquet"));
  const std::vector<std::vector<std::string>> halves = {{""},      {"15360"}, {"49152"}, {"32256"},
                                                        {"0"},     {"48128"}, {"32768"}, {"16384"}};
  CHECK(f16.rows == halves);
}

TEST_CASE("parquet corpus: data page v2, nullable and list columns, CRCs", "[parquet]") {
  const auto v2 = read_table(corpus("data/datapage_v2.snappy.parquet"));
  const std::vector<std::vector<std::string>> expect = {{"abc", "1", "2", "true", "1;2;3"},
                                                        {"abc", "2", "3", "true", ""},
                                                        {"abc", "3", "4", "true", ""},
                                                        {"", "4", "5", "false", "1;2;3"},
                                                        {"abc", "5", "2", "true", "1;2"}};
  CHECK(v2.rows == expect);
  const auto lists = read_table(corpus("data/repeated_primitive_no_list.parquet"));
  REQUIRE(lists.names == std::vector<std::string>{"Int32_list", "group_of_lists.Int32_list_in_group"});
  const std::vector<std::vector<std::string>> lists_expect = {
      {"0;1;2;3", "0;1;2;3"}, {"", ""}, {"4", "4"}, {"5;6;7;8", "5;6;7;8"}};
  CHECK(lists.rows == lists_expect);
  const auto nulls = read_table(corpus("data/nulls.snappy.parquet"));
  REQUIRE(nulls.rows.size() == 8);
  for (const auto& row : nulls.rows) CHECK(row[0] == "");
  // Pages with CRCs, checked: snappy and uncompressed, PLAIN and dictionary.
  for (const char* name : {"datapage_v1-snappy-compressed-checksum", "datapage_v1-uncompressed-checksum",
                           "plain-dict-uncompressed-checksum", "rle-dict-snappy-checksum"}) {
    INFO(name);
    CHECK(read_table(corpus(std::string("data/") + name + ".parquet")).rows.size() >= 1000);
  }
}

TEST_CASE("parquet corpus: a file cut short is named as cut, not as something else", "[parquet]") {
  // The first 60% of a real file: its PAR1 opens it, the footer is gone.
  const std::string whole = corpus("data/alltypes_plain.parquet");
  const auto size = std::filesystem::file_size(whole);
  std::ifstream in(whole, std::ios::binary);
  std::string bytes(size * 6 / 10, '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  sluice::io::test::TempDir dir;
  const std::string cut = dir.file("cut.parquet");
  std::ofstream(cut, std::ios::binary) << bytes;
  CHECK_THROWS_WITH(ParquetFile(cut), Contains(cut) && Contains("without its footer") &&
                                          Contains("ends after " + std::to_string(bytes.size()) + " bytes"));
  std::ofstream(dir.file("text.parquet")) << "id,name\n1,a\n2,b\n";
  CHECK_THROWS_WITH(ParquetFile(dir.file("text.parquet")), Contains("not a Parquet file (no PAR1 magic)"));
}
