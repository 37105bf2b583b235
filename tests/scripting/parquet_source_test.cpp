// sluice.parquet end to end: pipeline.lua over Parquet files of the
// apache/parquet-testing corpus, through load_script, a Loader and real
// worker processes.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "sluice/error.h"
#include "sluice/io/parquet.h"
#include "sluice/loader.h"
#include "sluice/plan.h"
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

// part-0.parquet .. part-3.parquet in dir: copies of a file of 5 row groups
// of 10 rows (20 row groups, 200 rows).
void write_copies(TempDir& dir) {
  std::ifstream in(kCorpus + "floating_orders_nan_count.parquet", std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  REQUIRE(!bytes.empty());
  for (int f = 0; f < 4; ++f) dir.write("part-" + std::to_string(f) + ".parquet", bytes);
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
  // A column named twice would be two fields of one name.
  CHECK_THROWS_WITH(
      sluice::load_script({.path = script_for("twice.lua", "sluice.parquet{ '" + kCorpus +
                                                                "datapage_v2.snappy.parquet', columns = { 'b', 'c', 'b' } }")}),
      Contains("sluice.parquet: columns[3] is 'b' again (columns[1]): each column is one field"));
  // A declared field no column gives: the columns it does give are named.
  CHECK_THROWS_WITH(
      sluice::load_script({.path = dir.write("unnamed.lua", "local sluice = require('sluice')\n"
                                                            "return sluice.pipeline { source = sluice.parquet{ '" +
                                                                kCorpus + "datapage_v2.snappy.parquet', columns = { 'b', "
                                                                          "'c' } }, fields = { { 'idx', 'int32' } }, "
                                                                          "batch_size = 4 }\n")}),
      Contains("source gives no field 'idx' for sample 0 (") && Contains("datapage_v2.snappy.parquet row 0): it gives b, c"));
}

TEST_CASE("parquet: shuffle_window shuffles row groups a window at a time, each decoded about once an epoch",
          "[sources][parquet]") {
  // 4 copies of a file of 5 row groups of 10 rows: 20 row groups, 200 rows.
  TempDir dir;
  write_copies(dir);
  const auto file = std::make_shared<const sluice::io::ParquetFile>(dir.path() + "/part-0.parquet");
  REQUIRE(file->row_groups().size() == 5);
  std::vector<double> expected;  // row r of each copy
  sluice::io::ParquetReader reader({file}, {"double_ieee754"});
  for (std::uint64_t r = 0; r < file->rows(); ++r) {
    sluice::io::ParquetValue v;
    reader.read(r, {&v, 1});
    REQUIRE(v.bytes == 8);
    std::memcpy(&expected.emplace_back(), v.data, 8);
  }

  struct Run {
    std::map<std::uint64_t, std::vector<std::uint64_t>> order;  // epoch -> dataset rows, position by position
    std::uint64_t decoded = 0;
    std::vector<std::string> notes;
  };
  // given: the shuffle_window a caller gives over the script's (sluice run --shuffle-window).
  auto run = [&](int workers, int window, const std::string& kept = "", std::optional<std::uint32_t> given = {}) {
    const std::string path = dir.write("w.lua", R"(
local sluice = require('sluice')
return sluice.pipeline {
  source = sluice.parquet{ 'part-*.parquet', columns = { 'double_ieee754' })" + kept + R"( },
  batch_size = 10, shuffle = true, seed = 5, epochs = 2, workers = )" + std::to_string(workers) +
                                                     ", shuffle_window = " + std::to_string(window) + ",\n}\n");
    sluice::ScriptOptions options{.path = path};
    options.shuffle_window = given;
    sluice::Script script = sluice::load_script(options);
    CHECK(script.options.shard_sizes == std::vector<std::uint64_t>(20, 10));
    if (given) window = static_cast<int>(*given);
    Run out;
    {
      sluice::Loader loader(script.options);
      while (auto batch = loader.next()) {
        const auto value = column<double>(*batch, "double_ieee754");
        for (std::size_t j = 0; j < batch->size(); ++j) {
          const std::uint64_t id = batch->sample_ids()[j];
          const double want = expected[id % 50];
          CHECK((value[j] == want || (std::isnan(value[j]) && std::isnan(want))));
          out.order[batch->epoch()].push_back(id);
        }
      }
    }
    out.decoded = script.worker_times().row_groups_decoded;
    out.notes = script.notes;
    if (window > 0) {
      const sluice::EpochPlan plan(script.options);
      REQUIRE(plan.shard_shuffle() != nullptr);
      for (const auto& [epoch, ids] : out.order) {
        INFO("epoch " << epoch);
        REQUIRE(ids.size() == 200);
        CHECK(std::set<std::uint64_t>(ids.begin(), ids.end()).size() == 200);
        // Each position reads a row group of its window, and a group's rows
        // all lie within one window's 20 positions.
        const auto epoch_order = plan.shard_shuffle()->epoch(epoch);
        std::map<std::uint64_t, std::pair<std::uint64_t, std::uint64_t>> span;  // group -> first, last position
        for (std::uint64_t p = 0; p < ids.size(); ++p) {
          const auto in_window = epoch_order->shards_between(p, p + 1);
          CHECK(in_window.size() <= 2);
          CHECK(std::count(in_window.begin(), in_window.end(), static_cast<std::uint32_t>(ids[p] / 10)) == 1);
          auto [at, fresh] = span.try_emplace(ids[p] / 10, p, p);
          if (!fresh) at->second.second = p;
        }
        for (const auto& [group, positions] : span) CHECK(positions.second - positions.first < 20);
      }
    }
    return out;
  };
  const Run one = run(1, 2), two = run(2, 2), global = run(2, 0), thrashing = run(2, 0, ", row_groups = 2");
  CHECK(one.order == two.order);
  // A worker decodes a window's groups once: at most 20 a worker an epoch.
  // The global shuffle of a table this small keeps every group decoded in
  // each worker: each decoded once a worker. Told to keep 2 of the 20, it
  // decodes a group for nearly every row, and a note says what to set.
  std::printf("parquet shuffle_window = 2: %.2f decodes per row group per epoch (1 worker), %.2f (2 workers, each "
              "decoding its own); global shuffle, 2 workers: %.2f, with row_groups = 2: %.2f\n",
              static_cast<double>(one.decoded) / 40, static_cast<double>(two.decoded) / 40,
              static_cast<double>(global.decoded) / 40, static_cast<double>(thrashing.decoded) / 40);
  CHECK(one.decoded <= 40);
  CHECK(two.decoded <= 80);
  CHECK(global.decoded <= 40);
  CHECK(thrashing.decoded > 2 * two.decoded);
  auto has = [](const Run& r, const std::string& text) {
    return std::any_of(r.notes.begin(), r.notes.end(), [&](const std::string& n) { return n.find(text) != std::string::npos; });
  };
  CHECK(has(global, "the global shuffle reads its 20 row groups in any order: each worker keeps them all decoded"));
  CHECK(has(thrashing, "a worker keeps 2 decoded (row_groups): most rows decode a group. shuffle_window = k"));
  CHECK(!has(two, "the global shuffle"));
  // A window given over the script's global shuffle is the window the load
  // plans for: no note of the global shuffle, a window's groups kept.
  const Run overridden = run(2, 0, "", 2u);
  CHECK(overridden.order == two.order);
  CHECK(overridden.decoded <= 80);
  CHECK(!has(overridden, "the global shuffle"));
}

namespace {

// Every batch of a run of `script` as text: epoch, index, sample ids, then
// each field's bytes, in delivery order; *gathered: the rows the workers
// gathered from row groups read out of order.
std::vector<std::string> batch_bytes(const std::string& script, std::uint64_t* gathered = nullptr) {
  sluice::Script loaded = sluice::load_script({.path = script});
  std::vector<std::string> out;
  {
  sluice::Loader loader(loaded.options);
  while (auto batch = loader.next()) {
    std::string text = std::to_string(batch->epoch()) + "/" + std::to_string(batch->index()) + ":";
    for (const std::uint64_t id : batch->sample_ids()) text += std::to_string(id) + ",";
    for (std::size_t f = 0; f < batch->field_count(); ++f) {
      const sluice::FieldView view = batch->field(f);
      text += "|" + std::string(static_cast<const char*>(view.data), view.nbytes);
    }
    out.push_back(std::move(text));
  }
  }
  if (gathered != nullptr) *gathered = loaded.worker_times().parquet_rows_gathered;
  return out;
}

}  // namespace

TEST_CASE("parquet: without a map, runs of rows go straight into the batch with the bytes a map would write",
          "[sources][parquet]") {
  // The same pipeline with and without an identity map: with it every row
  // takes the path of every sample (views, map, store); without it runs of
  // consecutive rows are copied column by column, and a shuffled batch's
  // other rows gathered from their row group column by column. Row groups of 10 rows
  // (4 copies of a file of 5), batches of 7 that straddle them, in order and
  // shuffled, on 1 and 2 workers; a table of nullable columns without
  // nulls; a column with nulls and one of lists of several lengths (its
  // field declared), whose rows under on_error = 'skip' are dropped by
  // either path alike.
  TempDir dir;
  write_copies(dir);

  struct Case {
    std::string source, options;
    bool gathers = false;  // a shuffled batch whose dense columns are gathered
  };
  const std::string tiny = "sluice.parquet{ '" + kCorpus + "alltypes_tiny_pages_plain.parquet', columns = { 'id', "
                           "'bool_col', 'tinyint_col', 'smallint_col', 'bigint_col', 'float_col', 'double_col', "
                           "'timestamp_col', 'month' } }";
  const std::vector<Case> cases = {
      {"sluice.parquet{ 'part-*.parquet' }", "batch_size = 7, shuffle = false, workers = 1, epochs = 2"},
      {"sluice.parquet{ 'part-*.parquet' }", "batch_size = 7, shuffle = false, workers = 2"},
      {"sluice.parquet{ 'part-*.parquet' }", "batch_size = 7, shuffle = true, seed = 4, workers = 1", true},
      {"sluice.parquet{ 'part-*.parquet' }", "batch_size = 7, shuffle = true, seed = 4, workers = 2, shuffle_window = 2", true},
      {tiny, "batch_size = 100, shuffle = false, workers = 2"},
      {tiny, "batch_size = 100, shuffle = true, seed = 9, workers = 1", true},
      {"sluice.parquet{ '" + kCorpus + "int32_with_null_pages.parquet' }",
       "batch_size = 16, shuffle = false, workers = 1, on_error = 'skip'"},
      {"sluice.parquet{ '" + kCorpus + "int32_with_null_pages.parquet' }",
       "batch_size = 16, shuffle = true, seed = 2, workers = 2, on_error = 'skip'"},
      {"sluice.parquet{ '" + kCorpus + "datapage_v2.snappy.parquet', columns = { 'b', 'c', 'd', 'e' } }",
       "fields = { { 'b', 'int32' }, { 'c', 'float64' }, { 'd', 'bool' }, { 'e', 'int32', { 3 } } }, "
       "batch_size = 2, shuffle = false, workers = 1, on_error = 'skip'"},
      // Strings into bytes fields (length, then bytes): row by row, beside
      // gathered columns; a null (not an empty string) and a string longer
      // than its field are dropped by either path.
      {"sluice.parquet{ '" + kCorpus + "alltypes_tiny_pages_plain.parquet', columns = { 'id', 'string_col', "
       "'date_string_col' } }",
       "fields = { { 'id', 'int32' }, { 'string_col', 'bytes', 4 }, { 'date_string_col', 'bytes', 16 } }, "
       "batch_size = 100, shuffle = true, seed = 3, workers = 2", true},
      // Shuffled rows gathered whole from the interleaved row and split into
      // the fields (four 4-byte fields side by side transposed at once):
      // fields in the columns' order, in another order, and beside a string.
      {"sluice.parquet{ '" + kCorpus + "alltypes_tiny_pages_plain.parquet', columns = { 'id', 'int_col', 'year', "
       "'month', 'float_col' } }",
       "batch_size = 100, shuffle = true, seed = 6, workers = 1", true},
      {"sluice.parquet{ '" + kCorpus + "alltypes_tiny_pages_plain.parquet', columns = { 'id', 'int_col', 'year', "
       "'month', 'float_col' } }",
       "fields = { { 'month', 'int32' }, { 'float_col', 'float32' }, { 'id', 'int32' }, { 'int_col', 'int32' }, "
       "{ 'year', 'int32' } }, batch_size = 37, shuffle = true, seed = 8, workers = 2", true},
      {"sluice.parquet{ '" + kCorpus + "alltypes_tiny_pages_plain.parquet', columns = { 'id', 'string_col', "
       "'int_col', 'year', 'month', 'float_col' } }",
       "fields = { { 'id', 'int32' }, { 'string_col', 'bytes', 4 }, { 'int_col', 'int32' }, { 'year', 'int32' }, "
       "{ 'month', 'int32' }, { 'float_col', 'float32' } }, batch_size = 64, shuffle = true, seed = 3, workers = 1",
       true},
      {"sluice.parquet{ '" + kCorpus + "datapage_v2.snappy.parquet', columns = { 'a', 'b' } }",
       "fields = { { 'a', 'bytes', 3 }, { 'b', 'int32' } }, batch_size = 2, shuffle = false, workers = 1, "
       "on_error = 'skip'"},
      {"sluice.parquet{ '" + kCorpus + "datapage_v2.snappy.parquet', columns = { 'a', 'b' } }",
       "fields = { { 'a', 'bytes', 3 }, { 'b', 'int32' } }, batch_size = 3, shuffle = true, seed = 1, workers = 1, "
       "on_error = 'skip'"},
      // Strings of 1 to 7 bytes (row 0's fits), those past 4 dropped.
      {"sluice.parquet{ '" + kCorpus + "data_index_bloom_encoding_stats.parquet' }",
       "fields = { { 'String', 'bytes', 4 } }, batch_size = 3, shuffle = true, seed = 1, workers = 2, "
       "on_error = 'skip'"},
  };
  for (const Case& c : cases) {
    INFO(c.source << " " << c.options);
    auto script = [&](const std::string& name, const std::string& map) {
      return dir.write(name, "local sluice = require('sluice')\nreturn sluice.pipeline { source = " + c.source +
                                 ", " + map + c.options + " }\n");
    };
    std::uint64_t gathered = 0, gathered_mapped = 0;
    const auto direct = batch_bytes(script("direct.lua", ""), &gathered);
    const auto mapped = batch_bytes(script("mapped.lua", "map = function(s) return s.fields end, "), &gathered_mapped);
    CHECK(!direct.empty());
    CHECK(direct == mapped);
    CHECK(gathered_mapped == 0);
    // Shuffled, most rows are gathered (a few fall in runs by chance); in
    // order only a row alone at a batch's or a row group's edge.
    if (c.gathers) CHECK(gathered > 100);
    if (c.options.find("shuffle = false") != std::string::npos) CHECK(gathered <= 2 * direct.size());
  }
}

TEST_CASE("parquet: without a map, a string longer than its bytes field fails the run with the field named",
          "[sources][parquet]") {
  // No row of column a fits (its null neither): whichever row is made first
  // (sample 0 at load, or a batch in the worker) fails with the field and
  // its size.
  TempDir dir;
  const std::string path = dir.write("p.lua", "local sluice = require('sluice')\nreturn sluice.pipeline { source = "
                                              "sluice.parquet{ '" + kCorpus + "datapage_v2.snappy.parquet', columns = "
                                              "{ 'a', 'b' } }, fields = { { 'a', 'bytes', 2 }, { 'b', 'int32' } }, "
                                              "batch_size = 2, shuffle = true, seed = 1, workers = 1 }\n");
  auto run = [&] {
    sluice::Script script = sluice::load_script({.path = path});
    sluice::Loader loader(script.options);
    while (loader.next()) {
    }
  };
  CHECK_THROWS_WITH(run(), Catch::Matchers::Contains("field 'a'") &&
                               Catch::Matchers::Contains("more than the 2 its declaration allows"));
}

TEST_CASE("parquet: without a map the fields come from the schema, and strings and lists need a declared field",
          "[sources][parquet]") {
  // Never from row 0's values: a string's length or a list's would fix a
  // shape the next row breaks (datapage_v2: a is a nullable string, e a
  // nullable list of int32, b and c fixed-size).
  TempDir dir;
  auto script_for = [&](const std::string& name, const std::string& columns, const std::string& more = "") {
    return dir.write(name, "local sluice = require('sluice')\nreturn sluice.pipeline { source = sluice.parquet{ '" +
                               kCorpus + "datapage_v2.snappy.parquet', columns = { " + columns +
                               " } }, batch_size = 2" + more + " }\n");
  };
  CHECK_THROWS_WITH(sluice::load_script({.path = script_for("strings.lua", "'b', 'a'")}),
                    Contains("strings.lua") && Contains("datapage_v2.snappy.parquet") && Contains("column 'a'") &&
                        Contains("BYTE_ARRAY (string)") && Contains("fields = { { 'a', 'bytes', N }") &&
                        Contains("map"));
  // Under on_error = 'skip' too: a schema the fields cannot take is no failed sample.
  CHECK_THROWS_WITH(sluice::load_script({.path = script_for("skip.lua", "'b', 'a'", ", on_error = 'skip'")}),
                    Contains("column 'a'") && !Contains("failed in the trial run"));
  CHECK_THROWS_WITH(sluice::load_script({.path = script_for("lists.lua", "'b', 'e'")}),
                    Contains("datapage_v2.snappy.parquet") && Contains("column 'e'") && Contains("lists of INT32") &&
                        Contains("fields = { { 'e', 'int32', { N } }"));
  // Declared, they are read (strings into bytes fields, lists of the length declared).
  sluice::Script strings = sluice::load_script(
      {.path = script_for("declared.lua", "'b', 'a'", ", fields = { { 'a', 'bytes', 8 }, { 'b', 'int32' } }")});
  CHECK(strings.options.fields.size() == 2);
  // The fixed-size columns are the fields, typed by the schema, with a note saying so.
  sluice::Script fixed = sluice::load_script({.path = script_for("fixed.lua", "'c', 'b'")});
  REQUIRE(fixed.options.fields.size() == 2);
  CHECK(fixed.options.fields[0].name == "b");
  CHECK(fixed.options.fields[0].shape.empty());
  CHECK(fixed.options.fields[1].dtype == sluice::DType::f64);
  REQUIRE(!fixed.notes.empty());
  CHECK_THAT(fixed.notes[0], Contains("from the Parquet schema") && Contains("b int32[], c float64[]"));
  // A FIXED_LEN_BYTE_ARRAY without a logical type is fixed-size too: uint8[4].
  sluice::Script flba = sluice::load_script(
      {.path = dir.write("flba.lua", "local sluice = require('sluice')\nreturn sluice.pipeline { source = "
                                     "sluice.parquet{ '" + kCorpus + "fixed_length_byte_array.parquet' }, "
                                     "batch_size = 2, on_error = 'skip' }\n")});
  REQUIRE(flba.options.fields.size() == 1);
  CHECK(flba.options.fields[0].shape == std::vector<std::int64_t>{4});
  // More columns than a batch has fields: the file, the count, the limit and the ways out.
  CHECK_THROWS_WITH(
      sluice::load_script({.path = dir.write("wide.lua", "local sluice = require('sluice')\nreturn sluice.pipeline { "
                                                         "source = sluice.parquet{ '" + kCorpus +
                                                         "delta_encoding_required_column.parquet' }, batch_size = 2 }\n")}),
      Contains("wide.lua") && Contains("delta_encoding_required_column.parquet has 17 columns") &&
          Contains("at most 16 fields") && Contains("columns = {") && Contains("map"));
}

TEST_CASE("parquet: a null string is not an empty one: refused by a bytes field, data nil in a map",
          "[sources][parquet]") {
  TempDir dir;
  // datapage_v2.snappy.parquet: column a, strings of which row 3 is null.
  const std::string table = kCorpus + "datapage_v2.snappy.parquet";
  auto pipeline = [&](const std::string& rest) {
    return dir.write("p.lua", "local sluice = require('sluice')\nreturn sluice.pipeline { source = sluice.parquet{ '" +
                                  table + "', columns = { 'a' } }, batch_size = 5, workers = 2, " + rest + " }\n");
  };
  auto drain = [&](const std::string& rest, const char* field) {
    sluice::Script script = sluice::load_script({.path = pipeline(rest)});
    sluice::Loader loader(script.options);
    std::vector<std::int64_t> got;  // field's value per sample, in order
    while (auto batch = loader.next())
      for (std::int64_t v : column<std::int64_t>(*batch, field)) got.push_back(v);
    return got;
  };
  // In the batch a bytes field is its length, then its bytes: the lengths.
  auto lengths = [](const std::vector<std::int64_t>& slots) {
    std::vector<std::int64_t> out;
    for (std::size_t k = 0; k < slots.size(); k += 2) out.push_back(slots[k]);
    return out;
  };
  const std::string bytes_field = "fields = { { 'a', 'bytes', 8 } }";
  CHECK_THROWS_WITH(drain(bytes_field + ", on_error = 'fail'", "a"),
                    Contains("datapage_v2.snappy.parquet row 3: column 'a' is null") &&
                        Contains("(bytes, at most 8)") && Contains("on_error = \"skip\""));
  CHECK(lengths(drain(bytes_field + ", on_error = 'skip'", "a")) == std::vector<std::int64_t>{3, 3, 3, 3});
  // A map tells them apart by data: nil for the null.
  CHECK(drain("fields = { { 'null', 'int64' } }, map = function(s) return { null = s.fields.a.data == nil and 1 or 0 "
              "} end",
              "null") == std::vector<std::int64_t>{0, 0, 0, 1, 0});
}

TEST_CASE("parquet: a null going into a fixed field names the file, the row and the column, and skip drops it",
          "[sources][parquet]") {
  TempDir dir;
  // nulls.snappy.parquet: b_struct.b_c_int, a nullable int32 whose rows are null.
  for (const char* fields : {"", ", fields = { { 'b_struct.b_c_int', 'int32' } }"}) {
    INFO(fields);
    const std::string path =
        dir.write("nulls.lua", "local sluice = require('sluice')\nreturn sluice.pipeline { source = sluice.parquet{ '" +
                                   kCorpus + "nulls.snappy.parquet', columns = { 'b_struct.b_c_int' } }, " +
                                   "batch_size = 2" + fields + " }\n");
    CHECK_THROWS_WITH(sluice::load_script({.path = path}),
                      Contains("nulls.snappy.parquet row 0: column 'b_struct.b_c_int' is null") &&
                          Contains("int32[]") && Contains("on_error = \"skip\""));
  }

  // int32_with_null_pages.parquet: 1000 rows of a nullable int32, some null;
  // in the workers (runs copied straight into the batch leave a null's row
  // to the path that reports it) the same error, and under skip every other row.
  const std::string table = kCorpus + "int32_with_null_pages.parquet";
  auto file = std::make_shared<const sluice::io::ParquetFile>(table);
  sluice::io::ParquetReader reader({file}, {});
  std::vector<sluice::io::ParquetValue> value(1);
  std::multiset<std::int32_t> present;
  std::uint64_t first_null = UINT64_MAX;
  for (std::uint64_t r = 0; r < reader.rows(); ++r) {
    reader.read(r, value);
    if (value[0].bytes == 0) {
      first_null = std::min(first_null, r);
      continue;
    }
    std::int32_t v = 0;
    std::memcpy(&v, value[0].data, sizeof v);
    present.insert(v);
  }
  REQUIRE(first_null > 0);  // row 0 has a value: the load's trial passes
  REQUIRE(present.size() > 100);
  REQUIRE(present.size() < 1000);
  auto pipeline = [&](const std::string& on_error) {
    return dir.write("p.lua", "local sluice = require('sluice')\nreturn sluice.pipeline { source = sluice.parquet{ '" +
                                  table + "' }, batch_size = 50, workers = 2, on_error = '" + on_error + "' }\n");
  };
  auto drain = [&](const std::string& on_error) {
    sluice::Script script = sluice::load_script({.path = pipeline(on_error)});
    sluice::Loader loader(script.options);
    std::multiset<std::int32_t> got;
    while (auto batch = loader.next())
      for (std::int32_t v : column<std::int32_t>(*batch, "int32_field")) got.insert(v);
    return got;
  };
  CHECK_THROWS_WITH(drain("fail"), Contains("int32_with_null_pages.parquet row ") &&
                                       Contains("column 'int32_field' is null"));
  CHECK(drain("skip") == present);
}
