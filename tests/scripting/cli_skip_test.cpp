// on_error = "skip" end to end: a bad sample 0 at load, skip reasons in
// `sluice run`'s summary, its run record and its skip log, skip_fill; and
// absurd field sizes. Real corrupt JPEGs from ../shared/data.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include "sluice/error.h"
#include "sluice/loader.h"
#include "sluice/script.h"
#include "support.h"

using Catch::Contains;
using sluice::test::CliResult;
using sluice::test::TempDir;
namespace fs = std::filesystem;

namespace {

// imgs/ with the given pillow-tests files under sorted names (00.jpg, 01.jpg,
// ...), so that the first entry is sample 0. Returns "" when the data is absent.
std::string image_folder(const TempDir& dir, const std::vector<std::string>& files) {
  const std::string data = sluice::test::shared_data();
  if (data.empty()) return "";
  fs::create_directories(dir.path() + "/imgs");
  for (std::size_t i = 0; i < files.size(); ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "%02zu.jpg", i);
    fs::copy_file(data + "/images/pillow-tests/" + files[i], dir.path() + "/imgs/" + name);
  }
  return dir.path() + "/imgs";
}

// Decodes each JPEG and shrinks it to 8x8: a corrupt file fails in map.
std::string image_pipeline(const std::string& options, bool declare_fields = true) {
  return std::string(R"(local sluice = require("sluice")
local image = require("sluice.image")
return sluice.pipeline {
  source = sluice.files { "imgs/*.jpg" },
)") + (declare_fields ? "  fields = { { \"img\", \"uint8\", { 8, 8, 3 } } },\n" : "") +
         "  " + options + R"(
  map = function(s, ctx)
    local img = image.decode(s.bytes, { name = s.path, channels = 3 })
    return { img = image.resize(img, ctx:tensor("uint8", { 8, 8, 3 })) }
  end,
}
)";
}

// Good JPEGs of several layouts, and two whose data ends early (libjpeg's
// "Premature end of JPEG file", an error in sluice.image).
const std::vector<std::string> kGood = {"hopper.jpg", "rgb.jpg", "flower.jpg", "flower2.jpg",
                                        "hopper_gray.jpg", "pil_sample_rgb.jpg", "app13.jpg"};
const std::string kTruncated = "truncated_jpeg.jpg";

}  // namespace

TEST_CASE("on_error = skip: a corrupt sample 0 is skipped by the workers, not fatal at load", "[skip]") {
  TempDir dir;
  std::vector<std::string> files = {kTruncated};
  files.insert(files.end(), kGood.begin(), kGood.begin() + 4);
  if (image_folder(dir, files).empty()) return;

  SECTION("on_error = fail keeps the clear error at load, naming the file") {
    const std::string script = dir.write("fail.lua", image_pipeline("batch_size = 2, workers = 1,"));
    CHECK_THROWS_WITH(sluice::load_script({.path = script}), Contains("00.jpg") && Contains("sample 0"));
  }
  for (bool declared : {true, false}) {
    DYNAMIC_SECTION("on_error = skip, fields " << (declared ? "declared" : "inferred")) {
      const std::string script =
          dir.write("skip.lua", image_pipeline("batch_size = 2, workers = 2, on_error = 'skip',", declared));
      sluice::Script s = sluice::load_script({.path = script});
      bool noted = false;
      for (const auto& note : s.notes) noted = noted || note.find("sample 0 failed in the trial") != std::string::npos;
      CHECK(noted);
      if (!declared) {
        REQUIRE(s.options.fields.size() == 1);
        CHECK(s.options.fields[0].shape == std::vector<std::int64_t>{8, 8, 3});
      }
      sluice::Loader loader(s.options);
      std::uint64_t samples = 0;
      while (auto batch = loader.next()) samples += batch->size();
      CHECK(samples == 4);
      const sluice::Stats stats = loader.stats();
      REQUIRE(stats.skipped_samples == std::vector<std::uint64_t>{0});
      REQUIRE(stats.skip_reasons.size() == 1);
      CHECK_THAT(stats.skip_reasons[0], Contains("00.jpg"));
    }
  }
  SECTION("the command line's --on-error skip applies to the trial too") {
    const std::string script = dir.write("cli.lua", image_pipeline("batch_size = 2, workers = 1,"));
    CliResult failed = sluice::test::run_cli({"run", script, "--quiet"});
    CHECK(failed.status == 1);
    CHECK_THAT(failed.err, Contains("00.jpg"));
    CliResult skipped = sluice::test::run_cli({"run", script, "--quiet", "--on-error", "skip"});
    INFO(skipped.err);
    CHECK(skipped.status == 0);
    CHECK_THAT(skipped.out, Contains("delivered   3 batches, 4 samples") && Contains("sample 0: ") &&
                                Contains("00.jpg"));
  }
}

TEST_CASE("on_error = skip: when every sample tried at load fails, the error says so", "[skip]") {
  TempDir dir;
  if (image_folder(dir, {kTruncated, kTruncated, kTruncated}).empty()) return;
  const std::string script = dir.write("bad.lua", image_pipeline("on_error = 'skip',"));
  CHECK_THROWS_WITH(sluice::load_script({.path = script}),
                    Contains("bad.lua") && Contains("all 3 samples failed in the trial run") && Contains("00.jpg"));
}

TEST_CASE("a field of 2^64 bytes or more than 2^40 is a clear error at load, not a crash", "[skip][fields]") {
  TempDir dir;
  struct Case {
    const char* shape;
    const char* dtype;
  };
  for (const Case& c : {Case{"{ 2^31, 2^31, 4 }", "uint8"},          // 2^64 bytes exactly
                        Case{"{ 2^62, 8 }", "float64"},               // 2^71: overflows 64 bits
                        Case{"{ 2^20, 2^20, 2 }", "uint8"},           // 2^41: just absurd
                        Case{"{ 2^40, 2^40, 2^40, 2^40, 2^40 }", "float32"}}) {
    INFO(c.shape);
    const std::string script = dir.write("huge.lua", std::string(R"(local sluice = require("sluice")
return sluice.pipeline {
  source = sluice.range(4),
  fields = { { "label", "int64" }, { "huge", ")") + c.dtype + R"(", )" + c.shape + R"( } },
  map = function(i, ctx) return { label = i, huge = ctx.out.huge } end,
}
)");
    CHECK_THROWS_WITH(sluice::load_script({.path = script}),
                      Contains("huge.lua") && Contains("field 'huge'") && Contains("2^40 bytes"));
    CliResult r = sluice::test::run_cli({"run", script, "--quiet"});
    CHECK(r.status == 1);
    CHECK_THAT(r.err, Contains("field 'huge'"));
  }
  // 2^40 bytes exactly is allowed at load (whether memory can hold it is the Loader's question).
}

#ifdef SLUICE_CLI
TEST_CASE("skip reasons reach the summary, the run record and the skip log, also with skip_fill = repeat", "[skip][cli]") {
  TempDir dir;
  // 9 files, batches of 3: two corrupt (sample 0 and sample 5).
  std::vector<std::string> files = {kTruncated};
  files.insert(files.end(), kGood.begin(), kGood.begin() + 4);
  files.push_back("ultrahdr.jpg");
  files.insert(files.end(), kGood.begin() + 4, kGood.end());
  REQUIRE(files.size() == 9);
  if (image_folder(dir, files).empty()) return;

  for (const char* fill : {"shrink", "repeat"}) {
    INFO("skip_fill = " << fill);
    const std::string script = dir.write(
        std::string("p_") + fill + ".lua",
        image_pipeline(std::string("batch_size = 3, shuffle = true, seed = 11, epochs = 2, on_error = 'skip', "
                                   "skip_fill = '") + fill + "',"));
    std::vector<std::string> records;
    for (const char* workers : {"1", "2"}) {
      INFO("workers " << workers);
      const std::string base = dir.path() + "/" + fill + "_" + workers;
      CliResult r = sluice::test::run_cli({"run", script, "--quiet", "--workers", workers, "--record",
                                           base + ".jsonl", "--skip-log", base + ".skips"});
      INFO(r.out << r.err);
      REQUIRE(r.status == 0);
      // The summary names both bad files, by sample id and by path.
      CHECK_THAT(r.out, Contains("skipped     2 samples") && Contains("sample 0: ") && Contains("sample 5: ") &&
                            Contains("imgs/00.jpg") && Contains("imgs/05.jpg"));
      // The skip log: one JSON line per bad file, each with its id and reason.
      const auto log = sluice::test::read_lines(base + ".skips");
      REQUIRE(log.size() == 2);
      for (const std::string& line : log) {
        CHECK(line.front() == '{');
        CHECK(line.back() == '}');
        CHECK_THAT(line, Contains("\"sample\":") && Contains("\"reason\":\""));
        const bool first = line.find("\"sample\":0,") != std::string::npos;
        CHECK_THAT(line, Contains(first ? "imgs/00.jpg" : "imgs/05.jpg"));
        CHECK(line.find('\n') == std::string::npos);  // a traceback's newlines are escaped
      }
      // The record: its batches, and a skip entry per bad file.
      const auto batches = sluice::test::record_samples(base + ".jsonl");
      std::size_t delivered = 0;
      for (const auto& ids : batches) {
        delivered += ids.size();
        for (std::uint64_t id : ids) CHECK((id != 0 && id != 5));
        if (std::string(fill) == "repeat") CHECK(ids.size() == 3);
      }
      if (std::string(fill) == "shrink") CHECK(delivered == 2 * 7);
      std::size_t skip_lines = 0;
      for (const auto& line : sluice::test::read_lines(base + ".jsonl"))
        skip_lines += line.rfind("{\"skip\":{\"sample\":", 0) == 0;
      CHECK(skip_lines == 2);
      records.push_back(base + ".jsonl");
    }
    CliResult same = sluice::test::run_cli({"verify", records[0], records[1]});
    INFO(same.out << same.err);
    CHECK(same.status == 0);
    CHECK_THAT(same.out, Contains("identical") && Contains("the same 2 samples skipped"));
  }

  // The command line's --skip-fill overrides the script's.
  const std::string base = dir.path() + "/cli_repeat";
  CliResult r = sluice::test::run_cli({"run", dir.path() + "/p_shrink.lua", "--quiet", "--skip-fill", "repeat",
                                       "--record", base + ".jsonl"});
  REQUIRE(r.status == 0);
  for (const auto& ids : sluice::test::record_samples(base + ".jsonl")) CHECK(ids.size() == 3);
  CliResult bad = sluice::test::run_cli({"run", dir.path() + "/p_shrink.lua", "--skip-fill", "pad"});
  CHECK(bad.status == 2);
  CHECK_THAT(bad.err, Contains("--skip-fill expects shrink or repeat"));
}

TEST_CASE("skip_fill is validated like the other pipeline options", "[skip]") {
  TempDir dir;
  const std::string script = dir.write("p.lua", R"(local sluice = require("sluice")
return sluice.pipeline { source = sluice.range(4), skip_fill = "pad" }
)");
  CHECK_THROWS_WITH(sluice::load_script({.path = script}), Contains("skip_fill expects shrink or repeat"));
}
#endif
