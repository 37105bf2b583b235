// sluice.parquet end to end: pipeline.lua over Parquet files of the
// apache/parquet-testing corpus, through load_script, a Loader and real
// worker processes.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "sluice/error.h"
#include "sluice/loader.h"
#include "sluice/script.h"
#include "support.h"

using Catch::Matchers::Contains;
using sluice::test::TempDir;

namespace {

const std::string kCorpus = std::string(SLUICE_IO_TEST_DATA) + "/parquet-testing/data/";

template <typename T>
std::vector<T> column(const sluice::Batch& batch, const char* field) {
  const sluice::FieldView view = batch.field(field);
  std::vector<T> out(view.nbytes / sizeof(T));
  std::memcpy(out.data(), view.data, view.nbytes);
  return out;
}

}  // namespace

TEST_CASE("parquet: rows by column name in map, shuffled over two workers, each once", "[sources][parquet]") {
  TempDir dir;
  const std::string path = dir.write("p.lua", R"(
local sluice = require('sluice')
local ffi = require('ffi')
return sluice.pipeline {
  source = sluice.parquet{ ')" + kCorpus + R"(alltypes_tiny_pages_plain.parquet',
                           columns = { 'id', 'bigint_col', 'string_col' } },
  map = function(s, ctx)
    local text = s.fields.string_col
    return { id = s.fields.id.data[0], big = s.fields.bigint_col.data[0],
             digit = tonumber(ffi.string(text.data, text.nbytes)) }
  end,
  fields = { { 'id', 'int32' }, { 'big', 'int64' }, { 'digit', 'int64' } },
  batch_size = 100, shuffle = true, seed = 3, workers = 2,
}
)");
  sluice::Script script = sluice::load_script({.path = path});
  REQUIRE(script.options.dataset_size == 7300);
  sluice::Loader loader(script.options);
  std::set<std::int32_t> ids;
  std::vector<std::int32_t> order;
  while (auto batch = loader.next()) {
    const auto id = column<std::int32_t>(*batch, "id");
    const auto big = column<std::int64_t>(*batch, "big");
    const auto digit = column<std::int64_t>(*batch, "digit");
    for (std::size_t i = 0; i < id.size(); ++i) {
      INFO("id " << id[i]);
      CHECK(digit[i] == id[i] % 10);  // Impala's alltypes: string_col = id % 10
      CHECK(big[i] == digit[i] * 10);
      ids.insert(id[i]);
      order.push_back(id[i]);
    }
  }
  CHECK(ids.size() == 7300);
  CHECK(*ids.begin() == 0);
  CHECK(*ids.rbegin() == 7299);
  CHECK(!std::is_sorted(order.begin(), order.end()));
}

TEST_CASE("parquet: without a map the columns are the fields, and errors name the file and column", "[sources][parquet]") {
  TempDir dir;
  auto script_for = [&](const std::string& name, const std::string& source) {
    return dir.write(name, "local sluice = require('sluice')\nreturn sluice.pipeline { source = " + source +
                               ", batch_size = 4 }\n");
  };
  sluice::Script script = sluice::load_script(
      {.path = script_for("plain.lua", "sluice.parquet{ '" + kCorpus +
                                           "datapage_v2.snappy.parquet', columns = { 'b', 'c' } }")});
  REQUIRE(script.options.dataset_size == 5);
  REQUIRE(script.options.fields.size() == 2);
  CHECK(script.options.fields[0].dtype == sluice::DType::i32);
  CHECK(script.options.fields[1].dtype == sluice::DType::f64);
  sluice::Loader loader(script.options);
  auto batch = loader.next();
  REQUIRE(batch);
  CHECK(column<std::int32_t>(*batch, "b") == std::vector<std::int32_t>{1, 2, 3, 4});
  CHECK(column<double>(*batch, "c") == std::vector<double>{2, 3, 4, 5});

  CHECK_THROWS_WITH(
      sluice::load_script({.path = script_for("missing.lua", "sluice.parquet{ '" + kCorpus +
                                                                  "datapage_v2.snappy.parquet', columns = { 'z' } }")}),
      Contains("datapage_v2.snappy.parquet") && Contains("no column 'z'"));
  CHECK_THROWS_WITH(
      sluice::load_script({.path = script_for("nested.lua", "sluice.parquet{ '" + kCorpus +
                                                                 "nested_lists.snappy.parquet' }")}),
      Contains("nested_lists.snappy.parquet") && Contains("column 'a'") && Contains("nested lists"));
  CHECK_THROWS_WITH(sluice::load_script({.path = script_for("glob.lua", "sluice.parquet{ '" + kCorpus +
                                                                             "nothing*.parquet' }")}),
                    Contains("no file matches"));
  CHECK_THROWS_WITH(sluice::load_script({.path = script_for("key.lua", "sluice.parquet{ '" + kCorpus +
                                                                            "x.parquet', column = { 'a' } }")}),
                    Contains("sluice.parquet") && Contains("column"));
}
