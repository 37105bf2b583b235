// Every kind of pipeline error gives one clear message naming the script line,
// whether it shows while loading (sample 0 is made once before any worker) or
// inside a worker, and leaves no process behind.
#include <catch2/catch.hpp>

#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "sluice/error.h"
#include "sluice/loader.h"
#include "sluice/script.h"
#include "support.h"

using Catch::Contains;
using sluice::test::TempDir;

namespace {

// The message load_script throws for `script`, or "" if it loads.
std::string load_error(const TempDir& dir, const std::string& script) {
  const std::string path = dir.write("pipeline.lua", script);
  try {
    sluice::load_script({.path = path});
  } catch (const sluice::Error& e) {
    return e.what();
  }
  return "";
}

// The message a Loader's next() throws while running `script`, or "".
std::string run_error(const TempDir& dir, const std::string& script) {
  const std::string path = dir.write("pipeline.lua", script);
  sluice::Script loaded = sluice::load_script({.path = path});
  std::string message;
  {
    sluice::Loader loader(loaded.options);
    try {
      while (loader.next()) {
      }
    } catch (const sluice::Error& e) {
      message = e.what();
    }
  }
  CHECK(sluice::test::wait_for_no_descendants(2000).empty());
  return message;
}

// A pipeline over 64 samples whose map is `map` (fields: x float32[4]).
std::string with_map(const std::string& map) {
  return R"(local sluice = require("sluice")
return sluice.pipeline {
  source = sluice.range(64),
  fields = { { "x", "float32", { 4 } } },
  batch_size = 4, workers = 2,
  map = )" + map + "\n}\n";
}

}  // namespace

TEST_CASE("a syntax error names the file and line", "[errors]") {
  TempDir dir;
  const std::string message = load_error(dir, "local sluice = require('sluice')\nreturn sluice.pipeline {\n  source = sluice.range(3)\n  batch_size = 2 }\n");
  CHECK_THAT(message, Contains("syntax error"));
  CHECK_THAT(message, Contains("pipeline.lua:4:"));
}

TEST_CASE("a runtime error in map carries the sample index and a traceback", "[errors]") {
  TempDir dir;
  dir.write("helper.lua", "local M = {}\nfunction M.explode(v)\n  return v.missing.field\nend\nreturn M\n");
  const std::string script = R"(local sluice = require("sluice")
local helper = require("helper")
return sluice.pipeline {
  source = sluice.range(64),
  fields = { { "x", "float32", { 4 } } },
  batch_size = 4, workers = 2,
  map = function(i, ctx)
    if i == %d then helper.explode({}) end
    return { x = ctx.out.x }
  end,
}
)";
  char text[1024];
  SECTION("in a worker") {
    std::snprintf(text, sizeof text, script.c_str(), 37);
    const std::string message = run_error(dir, text);
    CHECK_THAT(message, Contains("map (") && Contains("pipeline.lua:7) failed on sample 37"));
    CHECK_THAT(message, Contains("helper.lua:3: attempt to index field 'missing'"));
    CHECK_THAT(message, Contains("stack traceback:"));
    CHECK_THAT(message, Contains("pipeline.lua:8: in function <"));
    CHECK_THAT(message, !Contains("[sluice."));
  }
  SECTION("on sample 0, before any worker") {
    std::snprintf(text, sizeof text, script.c_str(), 0);
    const std::string message = load_error(dir, text);
    CHECK_THAT(message, Contains("failed on sample 0"));
    CHECK_THAT(message, Contains("helper.lua:3:"));
  }
}

TEST_CASE("a wrong dtype or shape names the field, both types and the map", "[errors]") {
  TempDir dir;
  CHECK_THAT(run_error(dir, with_map(R"(function(i, ctx)
    if i == 9 then return { x = ctx:tensor("uint8", { 4 }) } end
    return { x = ctx.out.x }
  end)")),
             Contains("map (") && Contains("field 'x' of sample 9 must be float32[4], got uint8[4]"));
  CHECK_THAT(run_error(dir, with_map(R"(function(i, ctx)
    if i == 10 then return { x = ctx:tensor("float32", { 2, 2 }) } end
    return { x = ctx.out.x }
  end)")),
             Contains("field 'x' of sample 10 must be float32[4], got float32[2,2]"));
  CHECK_THAT(load_error(dir, with_map("function(i, ctx) return { x = 1.5 } end")),
             Contains("field 'x' of sample 0 must be float32[4], got the scalar 1.5"));
  CHECK_THAT(load_error(dir, with_map("function(i, ctx) return { x = { 1, 2, 3, 4 } } end")),
             Contains("field 'x' of sample 0 is a Lua table; a field value is a tensor"));
}

TEST_CASE("a map that returns nothing, or not a table, or a stray field", "[errors]") {
  TempDir dir;
  CHECK_THAT(run_error(dir, with_map(R"(function(i, ctx)
    if i == 21 then return end
    return { x = ctx.out.x }
  end)")),
             Contains("pipeline.lua:6) returned nothing for sample 21; it must return a table of fields (x)"));
  CHECK_THAT(load_error(dir, with_map("function(i, ctx) return ctx.out.x end")),
             Contains("returned a tensor for sample 0; it must return a table {field = value}"));
  CHECK_THAT(load_error(dir, with_map("function(i, ctx) return { x = ctx.out.x, y = 1 } end")),
             Contains("returned 'y' for sample 0, which is not a field (fields: x)"));
  CHECK_THAT(load_error(dir, with_map("function(i, ctx) return {} end")),
             Contains("returned no field 'x' for sample 0"));
}

TEST_CASE("integer fields refuse values they cannot hold", "[errors]") {
  TempDir dir;
  const std::string script = R"(local sluice = require("sluice")
return sluice.pipeline {
  source = sluice.range(8), fields = { { "b", "uint8" } },
  map = function(i) return { b = i == 0 and 300 or 1 } end,
}
)";
  CHECK_THAT(load_error(dir, script), Contains("field 'b' of sample 0 is uint8; 300 is not a value of that type"));
}

TEST_CASE("floating fields refuse a finite value past their range, which would be stored as inf", "[errors]") {
  TempDir dir;
  auto script = [](const std::string& dtype, const std::string& value) {
    return R"(local sluice = require("sluice")
return sluice.pipeline {
  source = sluice.range(8), fields = { { "x", ")" + dtype + R"(" } },
  map = function(i) return { x = i == 3 and )" + value + R"( or 1 } end,
}
)";
  };
  CHECK_THAT(run_error(dir, script("float32", "1e40")),
             Contains("field 'x' of sample 3 is float32; 1e+40 is past its range (it would be stored as inf)"));
  CHECK_THAT(run_error(dir, script("float16", "-70000")),
             Contains("field 'x' of sample 3 is float16; -70000 is past its range (it would be stored as -inf)"));
  CHECK_THAT(run_error(dir, script("bfloat16", "1e39")), Contains("is bfloat16; 1e+39 is past its range"));
  // The largest values each holds, and inf and NaN given, pass.
  for (const auto& [dtype, value] : std::vector<std::pair<std::string, std::string>>{
           {"float16", "65504"}, {"float32", "3.4e38"}, {"float64", "1e300"}, {"float32", "math.huge"}, {"float32", "0/0"}}) {
    INFO(dtype << " " << value);
    sluice::Loader loader(sluice::load_script({.path = dir.write("ok.lua", script(dtype, value))}).options);
    CHECK(loader.next());
  }
}

TEST_CASE("an unknown pipeline option lists each option once", "[errors]") {
  TempDir dir;
  const std::string error =
      load_error(dir, "local sluice = require('sluice')\nreturn sluice.pipeline { source = sluice.range(3), batchsize = 2 }\n");
  const std::size_t from = error.find("(options: ");
  REQUIRE(from != std::string::npos);
  std::string list = error.substr(from + 10, error.find(')', from) - from - 10) + ", ";
  std::multiset<std::string> names;
  for (std::size_t at = 0, comma; (comma = list.find(", ", at)) != std::string::npos; at = comma + 2)
    names.insert(list.substr(at, comma - at));
  for (const std::string& name : names) {
    INFO(name);
    CHECK(names.count(name) == 1);
  }
  for (const char* name : {"source", "pack", "shuffle_window", "skip_fill"}) CHECK(names.count(name) == 1);
}

TEST_CASE("configuration mistakes are reported at the script's line", "[errors]") {
  TempDir dir;
  CHECK_THAT(load_error(dir, "local sluice = require('sluice')\nreturn sluice.pipeline { source = sluice.range(3), batchsize = 2 }\n"),
             Contains("pipeline.lua: sluice.pipeline: unknown option 'batchsize'"));
  CHECK_THAT(load_error(dir, "local sluice = require('sluice')\nlocal p = sluice.pipeline { source = sluice.range(0) }\nreturn p\n"),
             Contains("pipeline.lua:2: sluice.range: size must be a positive integer"));
  CHECK_THAT(load_error(dir, "local sluice = require('sluice')\nlocal p = sluice.pipeline { source = sluice.range(3), fields = { { 'x', 'float33' } } }\nreturn p\n"),
             Contains("pipeline.lua:2: field 'x': unknown dtype float33"));
  CHECK_THAT(load_error(dir, "return 42\n"), Contains("must return sluice.pipeline{...}; it returned a number"));
  CHECK_THAT(load_error(dir, "local sluice = require('sluice')\nreturn sluice.pipeline { source = sluice.range(3), device = 'cuda' }\n"),
             Contains("device = \"cuda\" is not supported yet"));
  CHECK_THAT(load_error(dir, "local sluice = require('sluice')\nreturn sluice.pipeline { source = sluice.files { 'nope.bin' } }\n"),
             Contains("pipeline.lua: sluice.pipeline: sluice.files gives records of bytes; add map"));
  CHECK_THAT(load_error(dir, "local sluice = require('sluice')\nreturn sluice.pipeline { source = sluice.files { 'nope.bin' },\n"
                             "  map = function(s) return { n = s.bytes.nbytes } end }\n"),
             Contains("cannot open") && Contains("nope.bin: No such file or directory"));
  CHECK_THAT(load_error(dir, "local sluice = require('sluice')\nreturn sluice.pipeline { source = sluice.tfrecord { 'x.tfrecord', shuffle = true },\n"
                             "  map = function(s) return { n = s.bytes.nbytes } end }\n"),
             Contains("pipeline.lua:2: sluice.tfrecord: unknown option 'shuffle'"));
  CHECK_THAT(load_error(dir, "local sluice = require('sluice')\nreturn sluice.pipeline { source = sluice.range(3), on_error = 'ignore' }\n"),
             Contains("on_error expects fail or skip"));
  CHECK_THAT(load_error(dir, "error('top-level failure')\n"),
             Contains("failed: ") && Contains("pipeline.lua:1: top-level failure"));
}

TEST_CASE("a script that changes between runs fails in the worker, cleanly", "[errors]") {
  TempDir dir;
  // Each run of the script appends to runs.txt; the first run (the launching
  // process) sees none before it, every worker run sees some.
  const std::string script = R"(local sluice = require("sluice")
local log = sluice.path("runs.txt")
local before = io.open(log) and #io.open(log):read("*a") or 0
local f = io.open(log, "a"); f:write("x"); f:close()
return sluice.pipeline {
  source = sluice.range(before == 0 and 10 or 11),
  map = function(i) return { x = i } end,
}
)";
  const std::string message = run_error(dir, script);
  CHECK_THAT(message, Contains("describes 11 samples in this worker but 10 in the launching process"));
}

TEST_CASE("a directory that cannot be listed is a clear error", "[errors]") {
  TempDir dir;
  CHECK_THAT(load_error(dir, "local sluice = require('sluice')\nlocal p = sluice.pipeline { source = sluice.files { dir = 'missing' },\n"
                             "  map = function(s) return { n = s.bytes.nbytes } end }\nreturn p\n"),
             Contains("pipeline.lua: sluice.files: ") && Contains("missing"));
}

TEST_CASE("a missing script is a clear error", "[errors]") {
  REQUIRE_THROWS_WITH(sluice::load_script({.path = "/nonexistent/pipeline.lua"}),
                      Contains("cannot open pipeline /nonexistent/pipeline.lua"));
}
