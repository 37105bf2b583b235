// `sluice write` from a Parquet table (the apache/parquet-testing corpus's
// alltypes_plain, written by Impala): tar and TFRecord shards read back
// through sluice.tar / sluice.tfrecord give the same run record as the
// table read directly (sluice verify).
#include <catch2/catch.hpp>

#include <string>

#include "skip.h"
#include "support.h"

using Catch::Contains;
using sluice::test::CliResult;
using sluice::test::run_cli;
using sluice::test::TempDir;

#ifdef SLUICE_CLI

namespace {

const std::string kTable = std::string(SLUICE_IO_TEST_DATA) + "/parquet-testing/data/alltypes_plain.parquet";

// The table's id, float_col and string_col, or the shards' members of the same.
std::string pipeline(const std::string& source, const std::string& map) {
  return "local ffi = require('ffi')\nlocal sluice = require('sluice')\nreturn sluice.pipeline {\n  source = " + source +
         ",\n  batch_size = 3, workers = 2,\n"
         "  fields = { { 'id', 'int64' }, { 'x', 'float32' }, { 's', 'bytes', 64 } },\n"
         "  map = function(r, ctx)\n" + map + "  end,\n}\n";
}

const char* kFromTable =
    "    return { id = r.fields.id.data[0], x = r.fields.float_col.data[0], s = r.fields.string_col }\n";

void run_ok(const std::vector<std::string>& args) {
  const CliResult r = run_cli(args);
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
}

}  // namespace

TEST_CASE("sluice write: a Parquet table as tar and TFRecord shards reads back as the table", "[cli][write][parquet]") {
  TempDir dir;
  const std::string table = dir.write("table.lua", pipeline("sluice.parquet{ '" + kTable + "' }", kFromTable));
  run_ok({"run", table, "--quiet", "--record", dir.path() + "/table.jsonl"});
  // TFRecord: integers as an int64_list, float32 as a float_list, bytes as a bytes_list.
  run_ok({"write", table, "--to", dir.path() + "/tf", "--format", "tfrecord", "--shard-samples", "3"});
  const std::string tf = dir.write(
      "tf.lua", pipeline("sluice.tfrecord{ '" + dir.path() + "/tf/*.tfrecord' }",
                         "    local ex = sluice.example(r)\n"
                         "    return { id = ex:int64s('id').data[0], x = ex:floats('x').data[0], s = ex:bytes('s') }\n"));
  run_ok({"run", tf, "--quiet", "--record", dir.path() + "/tf.jsonl"});
  CliResult same = run_cli({"verify", dir.path() + "/table.jsonl", dir.path() + "/tf.jsonl"});
  INFO(same.out << same.err);
  CHECK(same.status == 0);
  // Tar: an integer scalar as decimal text (id.cls), a float as .npy, bytes as they are.
  run_ok({"write", table, "--to", dir.path() + "/tar", "--format", "tar", "--shard-samples", "3"});
  const std::string tar = dir.write(
      "tar.lua", pipeline("sluice.tar{ '" + dir.path() + "/tar/*.tar' }",
                          "    local id, x = r.fields['id.cls'], r.fields['x.npy']\n"
                          "    local header = 10 + ffi.cast('uint16_t*', x.data + 8)[0]  -- .npy v1\n"
                          "    return { id = tonumber(ffi.string(id.data, id.nbytes)),\n"
                          "             x = ffi.cast('float*', x.data + header)[0], s = r.fields.s }\n"));
  run_ok({"run", tar, "--quiet", "--record", dir.path() + "/tar.jsonl"});
  same = run_cli({"verify", dir.path() + "/table.jsonl", dir.path() + "/tar.jsonl"});
  INFO(same.out << same.err);
  CHECK(same.status == 0);
  const CliResult verify = run_cli({"verify", dir.path() + "/tar"});
  CHECK(verify.status == 0);
  CHECK_THAT(verify.out, Contains("8 samples"));
}

#else

TEST_CASE("sluice write: a Parquet table", "[cli][write]") { SKIP_TEST("the sluice executable was not built"); }

#endif
