// `sluice run` as a user runs it: exit status, what it prints, and no process
// left behind, whether the pipeline succeeds or fails.
#include <catch2/catch.hpp>

#include "skip.h"

#include <filesystem>
#include <string>
#include <vector>

#include "sluice/io/tar_index.h"
#include "sluice/run_settings.h"
#include "support.h"

using Catch::Contains;
using sluice::test::CliResult;
using sluice::test::TempDir;

#ifdef SLUICE_CLI

TEST_CASE("sluice run runs the quickstart and summarizes it", "[cli]") {
  const CliResult r = sluice::test::run_cli(
      {"run", SLUICE_EXAMPLES_DIR "/quickstart.lua", "--batches", "40", "--interval", "0.01", "--workers", "2"});
  INFO(r.err);
  CHECK(r.status == 0);
  CHECK_THAT(r.out, Contains("delivered   40 batches, 2560 samples"));
  CHECK_THAT(r.out, Contains("throughput"));
  CHECK_THAT(r.out, Contains("workers") && Contains("busy making batches"));
  CHECK_THAT(r.out, Contains("consumer    waited"));
  CHECK_THAT(r.out, Contains("verdict     "));
  CHECK_THAT(r.err, Contains("samples/s"));  // plain progress lines: stderr is not a terminal
  CHECK_THAT(r.err, !Contains("\r"));
  CHECK(sluice::test::wait_for_no_descendants(2000).empty());
}

TEST_CASE("sluice run --help documents every option", "[cli]") {
  const CliResult r = sluice::test::run_cli({"run", "--help"});
  CHECK(r.status == 0);
  for (const char* option : {"--epochs", "--workers", "--prefetch", "--seed", "--batches", "--interval", "--quiet"}) {
    CHECK_THAT(r.out, Contains(option));
  }
}

TEST_CASE("sluice run rejects bad usage with status 2", "[cli]") {
  CHECK(sluice::test::run_cli({"run"}).status == 2);
  CHECK(sluice::test::run_cli({"run", "x.lua", "--workers", "0"}).status == 2);
  CHECK(sluice::test::run_cli({"run", "x.lua", "--seed", "-1"}).status == 2);
  const CliResult r = sluice::test::run_cli({"run", "x.lua", "--frobnicate", "1"});
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Contains("unknown option --frobnicate"));
}

TEST_CASE("a failing pipeline exits 1 with its message and leaves no process", "[cli]") {
  TempDir dir;
  const std::string map_error = dir.write("map_error.lua", R"(local sluice = require("sluice")
return sluice.pipeline {
  source = sluice.range(400),
  fields = { { "x", "float32", { 64 } } },
  batch_size = 8, workers = 2, prefetch = 4,
  map = function(i, ctx)
    if i == 333 then error("bad record " .. i) end
    return { x = ctx.out.x }
  end,
}
)");
  const CliResult failed = sluice::test::run_cli({"run", map_error, "--quiet"});
  CHECK(failed.status == 1);
  CHECK_THAT(failed.err, Contains("sluice run: error: "));
  CHECK_THAT(failed.err, Contains("failed on sample 333"));
  CHECK_THAT(failed.err, Contains("map_error.lua:7: bad record 333"));
  CHECK(sluice::test::wait_for_no_descendants(2000).empty());

  const std::string syntax = dir.write("syntax.lua", "return {\n");
  const CliResult bad = sluice::test::run_cli({"run", syntax});
  CHECK(bad.status == 1);
  CHECK_THAT(bad.err, Contains("syntax error") && Contains("syntax.lua:2:"));
  CHECK(sluice::test::wait_for_no_descendants(2000).empty());
}

#endif

#ifdef SLUICE_CLI
namespace {

// Whether `text` holds a control byte other than a newline.
bool has_control_bytes(const std::string& text) {
  for (char c : text)
    if ((static_cast<unsigned char>(c) < 0x20 && c != '\n') || c == 0x7f) return true;
  return false;
}

}  // namespace

TEST_CASE("sluice inspect on records that are no tf.train.Example prints clean text", "[cli]") {
  const std::string data = SLUICE_SHARED_DATA;
  if (!std::filesystem::is_directory(data)) {
    SKIP_TEST(data << " is absent (the real-data fixtures)");
  }
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(data + "/tfrecord/tensorflow-ranking"))
    if (e.path().extension() == ".tfrecord") files.push_back(e.path().string());
  REQUIRE(files.size() == 7);
  files.push_back(data + "/tfrecord/magenta/notesequences.tfrecord");
  files.push_back(data + "/tfrecord/magenta/tfrecord_iterator_test.tfrecord");
  for (const std::string& file : files) {
    INFO(file);
    const CliResult r = sluice::test::run_cli({"inspect", "--records", "5", file});
    INFO(r.out << r.err);
    CHECK(r.status == 0);
    CHECK(r.err.empty());  // nothing printed raw by the decoder
    CHECK_THAT(r.out, !Contains("libprotobuf"));
    CHECK_FALSE(has_control_bytes(r.out));
    CHECK_THAT(r.out, Contains("TFRecord") && Contains("not a tf.train.Example: "));
  }
  const CliResult seq = sluice::test::run_cli({"inspect", data + "/tfrecord/pytorch-data/sequence_example.tfrecord"});
  CHECK(seq.status == 0);
  CHECK_THAT(seq.out, Contains("tf.train.SequenceExample") && Contains("x_float_seq") && Contains("3 steps"));
  const CliResult npz = sluice::test::run_cli({"inspect", SLUICE_IO_TEST_DATA "/small_compressed.npz"});
  CHECK(npz.status == 0);
  CHECK_THAT(npz.out, Contains(".npz archive, 2 members") && Contains("x.npy (deflated): float32 [4, 3]"));
}
#endif

TEST_CASE("RunSettings: one set of names for the command line, the C API and Python", "[cli][settings]") {
  sluice::RunSettings settings(std::string(SLUICE_EXAMPLES_DIR) + "/quickstart.lua");
  settings.set("workers", "1");
  settings.set("batch-size=7");  // '-' and '_' are the same, "name=value" is accepted
  settings.set("epochs", "2");
  settings.set("skip_fill", "repeat");
  REQUIRE_THROWS_WITH(settings.set("wrokers", "2"), Catch::Contains("unknown setting 'wrokers'") &&
                                                        Catch::Contains("workers"));
  REQUIRE_THROWS_WITH(settings.set("workers", "0"), Catch::Contains("workers expects an integer in [1,"));
  REQUIRE_THROWS_WITH(settings.set("workers", "abc"), Catch::Contains("] or \"auto\""));
  REQUIRE_THROWS_WITH(settings.set("shuffle", "yes"), Catch::Contains("true or false"));
  REQUIRE_THROWS_WITH(settings.set("epochs"), Catch::Contains("name=value"));
  REQUIRE_THROWS_WITH(settings.set("on_error", "ignore"), Catch::Contains("on_error expects fail or skip, got 'ignore'"));
  REQUIRE_THROWS_WITH(settings.set("shard_policy", "even"), Catch::Contains("shard_policy expects pad or drop"));
  REQUIRE_THROWS_WITH(settings.set("skip_fill", "pad"), Catch::Contains("skip_fill expects shrink or repeat"));  // kept: repeat
  REQUIRE(sluice::RunSettings::known("batch_timeout_ms"));
  REQUIRE_FALSE(sluice::RunSettings::known("record"));
  const sluice::Script script = settings.load();
  REQUIRE(script.options.workers == 1);
  REQUIRE(script.options.batch_size == 7);
  REQUIRE(script.options.epochs == 2);
  REQUIRE(script.options.skip_fill == sluice::SkipFill::repeat);
}

TEST_CASE("RunSettings: global_batch_size divides among the ranks, or is an error", "[cli][settings]") {
  const std::string quickstart = std::string(SLUICE_EXAMPLES_DIR) + "/quickstart.lua";
  sluice::Options o;
  sluice::RunSettings settings(quickstart);
  settings.set("world_size", "3");
  settings.set("global_batch_size", "96");
  settings.apply(o);
  REQUIRE(o.world_size == 3);
  REQUIRE(o.batch_size == 32);

  settings.set("batch_size", "30");
  REQUIRE_THROWS_WITH(settings.apply(o), Catch::Contains("batch_size 30 and global_batch_size 96 disagree on 3 ranks"));
  settings.set("batch_size", "32");
  settings.set("world_size", "5");
  REQUIRE_THROWS_WITH(settings.apply(o), Catch::Contains("global_batch_size 96 is not divisible by the world size 5"));
}

TEST_CASE("RunSettings::apply_all: the same names for options that come from no script", "[cli][settings]") {
  sluice::RunSettings settings;
  for (const char* setting : {"workers=3", "epochs=4", "prefetch=9", "seed=11", "on_error=skip", "batch_size=5",
                              "shuffle=true", "world_size=2", "rank=1"}) {
    settings.set(setting);
  }
  sluice::Options options;
  settings.apply_all(options);
  CHECK(options.workers == 3);
  CHECK(options.epochs == 4);
  CHECK(options.slots == 9);
  CHECK(options.seed == 11);
  CHECK(options.on_error == sluice::OnError::skip);
  CHECK(options.batch_size == 5);
  CHECK(options.shuffle);
  CHECK(options.rank == 1);
  CHECK(options.world_size == 2);
  sluice::Options untouched;
  sluice::RunSettings().apply_all(untouched);  // nothing set: the defaults stay (no launcher in the test's env)
  CHECK(untouched.workers == sluice::Options{}.workers);
  CHECK(untouched.seed == 0);
}

TEST_CASE("what a map prints reaches a pipe, once, and the host's unflushed output is not repeated", "[cli]") {
  TempDir dir;
  const std::string script = dir.write("print.lua", R"(local sluice = require("sluice")
io.write("LOADED\n")  -- in the host, still buffered when the zygote forks (stdout is a pipe)
return sluice.pipeline {
  source = sluice.range(6),
  fields = { { "x", "float32", { 1 } } },
  batch_size = 2, workers = 2,
  map = function(i, ctx)
    print("PRINT " .. i)
    return { x = ctx.out.x }
  end,
}
)");
  const CliResult r = sluice::test::run_cli({"run", script, "--quiet"});
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  auto count = [&](const std::string& what) {
    std::size_t n = 0;
    for (std::size_t at = r.out.find(what); at != std::string::npos; at = r.out.find(what, at + 1)) ++n;
    return n;
  };
  CHECK(count("LOADED\n") == 3);  // the host and each worker load the script once
  CHECK(count("PRINT 0\n") == 2);  // the host's trial of sample 0, then its worker
  for (int i = 1; i < 6; ++i) CHECK(count("PRINT " + std::to_string(i) + "\n") == 1);
}

TEST_CASE("sluice index builds JSON lines indexes and the decompressed copy of a gzip file", "[cli]") {
  if (std::system("command -v gzip >/dev/null") != 0) SKIP_TEST("the gzip command is absent (it writes the test file)");
  TempDir dir;
  const std::string plain = dir.write("a.jsonl", "{\"text\": \"x\"}\n\n{\"text\": \"y\"}\n");
  dir.write("b.jsonl", "{\"text\": \"z\"}\n");
  REQUIRE(std::system(("gzip -f " + dir.path() + "/b.jsonl").c_str()) == 0);
  const std::string gz = dir.path() + "/b.jsonl.gz";
  const CliResult r = sluice::test::run_cli({"index", plain, gz});
  CHECK(r.status == 0);
  CHECK_THAT(r.out, Contains(plain + ": 2 lines -> its index") && Contains(gz + ": 1 line -> its index and " + gz + ".plain"));
  CHECK(std::filesystem::exists(plain + ".idx"));
  CHECK(std::filesystem::exists(gz + ".idx"));
}

TEST_CASE("sluice inspect FILE.jsonl shows lines and keys and writes nothing, and index refuses other formats", "[cli]") {
  if (std::system("command -v gzip >/dev/null") != 0) SKIP_TEST("the gzip command is absent (it writes the test file)");
  TempDir dir;
  std::string long_text;  // 2-byte characters: a 60-byte preview would cut the 31st in two
  for (int i = 0; i < 40; ++i) long_text += "\xc3\xa9";
  dir.write("a.jsonl", "{\"text\": \"caf\\u00e9\", \"n\": 12, \"meta\": {\"a\": [1, 2]}}\n\n{\"text\": \"" + long_text + "\"}\n");
  REQUIRE(std::system(("gzip -k " + dir.path() + "/a.jsonl").c_str()) == 0);
  const std::string plain = dir.path() + "/a.jsonl", gz = plain + ".gz";
  const CliResult r = sluice::test::run_cli({"inspect", plain, gz});
  CHECK(r.status == 0);
  CHECK_THAT(r.out, Contains(plain + ": JSON lines, 2 lines") && Contains(gz + ": JSON lines (compressed), 2 lines") &&
                        Contains(plain + ": line 3") && Contains("5 bytes: caf\xc3\xa9") &&
                        Contains("2 bytes: 12") && Contains("{\"a\": [1, 2]}") &&
                        Contains("80 bytes: " + long_text.substr(0, 60) + "...\n"));
  std::size_t files = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir.path())) ++files;
  CHECK(files == 2);  // no index, no plain copy
  const CliResult missing = sluice::test::run_cli({"inspect", dir.path() + "/none.jsonl"});
  CHECK_THAT(missing.err, Contains("none.jsonl: No such file or directory"));
  const std::string odd = dir.write("model.bin", std::string(64, 'q'));
  const CliResult index = sluice::test::run_cli({"index", odd});
  CHECK(index.status == 1);
  CHECK_THAT(index.err, Contains(odd) && Contains("TFRecord, tar and JSON lines"));
}

TEST_CASE("sluice index FILE.tar writes FILE.tar.idx, read back as the scan of the shard, and refuses a gzip tar", "[cli]") {
  if (std::system("command -v tar >/dev/null && command -v gzip >/dev/null") != 0)
    SKIP_TEST("the tar or gzip command is absent (they write the test files)");
  TempDir dir;
  dir.write("a/0.txt", "zero");
  dir.write("a/0.cls", "0");
  dir.write("a/1.txt", std::string(3000, 'x'));
  REQUIRE(std::system(("cd " + dir.path() + " && tar -cf s.tar a/0.txt a/0.cls a/1.txt && gzip -k s.tar").c_str()) == 0);
  const std::string shard = dir.path() + "/s.tar";
  const CliResult r = sluice::test::run_cli({"index", shard});
  INFO(r.err);
  CHECK(r.status == 0);
  CHECK_THAT(r.out, Contains(shard + ": 2 samples -> " + shard + ".idx"));
  const sluice::io::TarIndex read = sluice::io::read_tar_index(shard + ".idx"), scanned = sluice::io::scan_tar(shard);
  CHECK(read.shard_bytes == std::filesystem::file_size(shard));
  REQUIRE(read.samples.size() == 2);
  CHECK(read.samples[0].key == "a/0");
  CHECK(read.samples[1].members.at(0).size == 3000);
  for (std::size_t i = 0; i < 2; ++i) {
    REQUIRE(read.samples[i].members.size() == scanned.samples[i].members.size());
    for (std::size_t j = 0; j < read.samples[i].members.size(); ++j) {
      CHECK(read.samples[i].members[j].field == scanned.samples[i].members[j].field);
      CHECK(read.samples[i].members[j].offset == scanned.samples[i].members[j].offset);
    }
  }
  const CliResult gz = sluice::test::run_cli({"index", shard + ".gz"});
  CHECK(gz.status == 1);
  CHECK_THAT(gz.err, Contains(shard + ".gz is a gzip-compressed tar"));
  const CliResult elsewhere = sluice::test::run_cli({"index", "--index-dir", dir.path(), shard});
  CHECK(elsewhere.status == 1);
  CHECK_THAT(elsewhere.err, Contains("a tar's index is read only beside its shard"));
  const CliResult help = sluice::test::run_cli({"index", "--help"});
  CHECK_THAT(help.out, Contains("FILE.tar.idx"));
}
