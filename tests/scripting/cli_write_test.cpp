// `sluice write`: real photos, a pipeline with augmentation, real worker
// processes and the real command line. The shards are read back through
// Sluice's readers (TarSource, and sluice.tfrecord + sluice.example in a
// pipeline) and compared sample by sample with the source pipeline read
// directly; 1 and 2 workers give identical shards; a conversion killed with
// SIGKILL resumes to the same shards; a corrupt shard is named.
#include <catch2/catch.hpp>

#include "skip.h"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>

#include "sluice/batch.h"
#include "sluice/error.h"
#include "sluice/io/atomic_file.h"
#include "sluice/io/manifest.h"
#include "sluice/io/record_source.h"
#include "sluice/io/tar.h"
#include "sluice/loader.h"
#include "sluice/script.h"
#include "support.h"

using Catch::Contains;
using sluice::test::CliResult;
using sluice::test::run_cli;
using sluice::test::TempDir;

#ifdef SLUICE_CLI

namespace {

namespace fs = std::filesystem;

// Real JPEGs and PNGs, a random crop with a random flip (per-sample rng), the
// label, and the file's bytes passed through unchanged.
const char* kAugment = R"(local sluice = require("sluice")
local image = require("sluice.image")
return sluice.pipeline {
  source = sluice.folders("train"),
  batch_size = 3, workers = 2, seed = 5,
  fields = { { "image", "uint8", { 24, 24, 3 } }, { "label", "int64" }, { "raw", "bytes", 4000000 } },
  map = function(s, ctx)
    local info = image.info(s.bytes, s.path)
    local box = image.random_resized_crop(info.width, info.height, ctx.rng)
    image.decode_crop(s.bytes, box, ctx.out.image, { name = s.path, layout = "hwc", flip = ctx.rng:bernoulli(0.5) })
    return { image = ctx.out.image, label = s.label, raw = s.bytes }
  end,
}
)";

// The TFRecords written from kAugment, read back through sluice.tfrecord.
const char* kReadTFRecord = R"(local ffi = require("ffi")
local sluice = require("sluice")
return sluice.pipeline {
  source = sluice.tfrecord{ "out/*.tfrecord" },
  batch_size = 3, workers = 1,
  fields = { { "image", "uint8", { 24, 24, 3 } }, { "label", "int64" }, { "raw", "bytes", 4000000 },
             { "key", "int64" } },
  map = function(s, ctx)
    local ex = sluice.example(s)
    ex:read("image", ctx.out.image)
    local key = ex:bytes("__key__")
    return { image = ctx.out.image, label = ex:int64s("label").data[0], raw = ex:bytes("raw"),
             key = tonumber(ffi.string(key.data, key.nbytes)) }
  end,
}
)";

// A sample as compared: the image's pixels, the label, the raw bytes.
struct Sample {
  std::string image;
  std::int64_t label = 0;
  std::string raw;
  bool operator==(const Sample&) const = default;
};

std::string text(const void* p, std::size_t n) { return std::string(static_cast<const char*>(p), n); }

// Every sample of a pipeline by id (field "key" when it has one, else the id).
std::map<std::uint64_t, Sample> read_pipeline(const std::string& path) {
  sluice::Script script = sluice::load_script({.path = path});
  sluice::Loader loader(script.options);
  std::map<std::uint64_t, Sample> out;
  while (auto batch = loader.next()) {
    const auto image = batch->field("image"), label = batch->field("label"), raw = batch->field("raw");
    for (std::size_t r = 0; r < batch->size(); ++r) {
      std::uint64_t id = batch->sample_ids()[r];
      if (batch->field_count() == 4) id = static_cast<std::uint64_t>(batch->field("key").as<std::int64_t>()[r]);
      const auto bytes = sluice::field_bytes(raw, r);
      out[id] = {text(static_cast<const char*>(image.data) + r * 24 * 24 * 3, 24 * 24 * 3),
                 label.as<std::int64_t>()[r], text(bytes.data(), bytes.size())};
    }
  }
  return out;
}

// The tar shards of `dir` read back with TarSource: the .npy member's data
// after its header, the label's text, the raw member.
std::map<std::uint64_t, Sample> read_tars(const std::string& dir) {
  const auto manifest = sluice::io::read_manifest(dir);
  REQUIRE(manifest);
  std::vector<std::string> shards;
  for (const auto& s : manifest->shards) shards.push_back(dir + "/" + s.name);
  sluice::io::TarSource source(shards);
  std::map<std::uint64_t, Sample> out;
  std::vector<std::byte> buffer;
  for (std::uint64_t i = 0; i < source.size(); ++i) {
    sluice::io::Sample s;
    sluice::io::read_sample(source, i, buffer, s);
    REQUIRE(s.field("image.npy"));
    REQUIRE(s.field("label.cls"));
    REQUIRE(s.field("raw"));
    const auto npy = s.field("image.npy")->bytes;
    std::uint16_t header = 0;
    std::memcpy(&header, npy.data() + 8, 2);
    CHECK(text(npy.data() + 10, header).find("'descr': '|u1', 'fortran_order': False, 'shape': (24, 24, 3)") !=
          std::string::npos);
    const auto label = s.field("label.cls")->bytes;
    const auto raw = s.field("raw")->bytes;
    out[std::stoull(std::string(s.key))] = {text(npy.data() + 10 + header, npy.size() - 10 - header),
                                           std::stoll(text(label.data(), label.size())),
                                           text(raw.data(), raw.size())};
  }
  return out;
}

std::string file_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Whether two written folders hold the same files with the same bytes.
void check_same_files(const fs::path& a, const fs::path& b) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(a)) names.push_back(e.path().filename().string());
  std::size_t in_b = 0;
  for (const auto& e : fs::directory_iterator(b)) (void)e, ++in_b;
  CHECK(names.size() == in_b);
  for (const std::string& n : names) {
    INFO(n);
    CHECK(file_text(a / n) == file_text(b / n));
  }
}

const sluice::test::ImageClasses kPhotos = {
    {"cat", {"hopper.jpg", "flower.jpg", "pil168.png", "rgb.jpg"}},
    {"dog", {"flower2.jpg", "hopper.png", "ftex_uncompressed.png"}}};

}  // namespace

TEST_CASE("sluice write: real photos with augmentation, tar and TFRecord, 1 and 2 workers", "[cli][write]") {
  TempDir dir;
  if (sluice::test::pillow_folder(dir, kPhotos).empty()) return;
  const std::string pipeline = dir.write("augment.lua", kAugment);
  const auto source = read_pipeline(pipeline);
  REQUIRE(source.size() == 7);
  for (const std::string format : {"tar", "tfrecord"}) {
    INFO(format);
    const std::string one = dir.path() + "/" + format + "1", two = dir.path() + "/" + format + "2";
    CliResult r1 = run_cli({"write", pipeline, "--to", one, "--format", format, "--shard-samples", "2", "-w", "1"});
    INFO(r1.err);
    REQUIRE(r1.status == 0);
    CliResult r2 = run_cli({"write", pipeline, "--to", two, "--format", format, "--shard-samples", "2", "-w", "2"});
    INFO(r2.err);
    REQUIRE(r2.status == 0);
    check_same_files(one, two);
    const auto manifest = sluice::io::read_manifest(one);
    REQUIRE(manifest);
    CHECK(manifest->complete);
    CHECK(manifest->shards.size() == 4);
    CHECK(manifest->samples() == 7);
    if (format == "tar") {
      CHECK(read_tars(one) == source);
    } else {
      fs::rename(one, dir.path() + "/out");
      CHECK(read_pipeline(dir.write("read.lua", kReadTFRecord)) == source);
    }
  }
  // A byte cut: shards stay within the size, and again independent of the workers.
  CliResult a = run_cli({"write", pipeline, "--to", dir.path() + "/b1", "--shard-size", "200KiB", "-w", "1"});
  CliResult b = run_cli({"write", pipeline, "--to", dir.path() + "/b2", "--shard-size", "200KiB", "-w", "2"});
  REQUIRE(a.status == 0);
  REQUIRE(b.status == 0);
  check_same_files(dir.path() + "/b1", dir.path() + "/b2");
}

TEST_CASE("sluice write: killed with SIGKILL mid-write, then resumed, gives the same shards", "[cli][write]") {
  TempDir dir;
  // 48 samples that take ~15 ms each on 2 workers, 4 per shard.
  const std::string pipeline = dir.write("slow.lua", R"(local sluice = require("sluice")
return sluice.pipeline {
  source = sluice.range(48), batch_size = 2, workers = 2,
  fields = { { "x", "float32", { 16 } }, { "n", "int64" }, { "blob", "bytes", 100 } },
  map = function(i, ctx)
    local t = os.clock() + 0.015
    while os.clock() < t do end
    local x = ctx.out.x
    for k = 0, 15 do x.data[k] = i * 16 + k + ctx.rng:uniform() end
    return { x = x, n = i * 3, blob = string.rep(string.char(65 + i % 26), i % 50) }
  end,
}
)");
  const std::string whole = dir.path() + "/whole", killed = dir.path() + "/killed";
  REQUIRE(run_cli({"write", pipeline, "--to", whole, "--shard-samples", "4"}).status == 0);

  std::vector<std::string> args{SLUICE_CLI, "write", pipeline, "--to", killed, "--shard-samples", "4"};
  std::vector<char*> argv;
  for (auto& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  REQUIRE(::posix_spawn(&pid, SLUICE_CLI, nullptr, nullptr, argv.data(), environ) == 0);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  std::size_t listed = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    try {
      if (auto m = sluice::io::read_manifest(killed)) listed = m->shards.size();
    } catch (const sluice::Error&) {
    }
    if (listed >= 3) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  // A second writer of the folder meanwhile is refused at once, naming it.
  const CliResult second = run_cli({"write", pipeline, "--to", killed, "--shard-samples", "4"});
  CHECK(second.status == 1);
  CHECK_THAT(second.err, Contains(killed + " is being written by another sluice write"));
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  sluice::test::wait_for_no_descendants(5000);
  REQUIRE(listed >= 3);
  const auto cut = sluice::io::read_manifest(killed);
  REQUIRE(cut);
  REQUIRE_FALSE(cut->complete);
  // Whatever the kill left: every listed shard is whole; nothing else looks
  // like one but the next shard (renamed, with its index, before the manifest
  // that lists it), or either's temporary.
  for (const auto& s : cut->shards) CHECK(sluice::io::check_shard(killed, s).empty());
  char next[32];
  std::snprintf(next, sizeof next, "shard-%06zu.tar", cut->shards.size());
  for (const auto& e : fs::directory_iterator(killed)) {
    const std::string name = e.path().filename().string();
    bool listed_or_tmp = name == "manifest.json" || name.ends_with(".tmp") ||
                         sluice::io::is_atomic_temporary(name, "manifest.json") || name == next ||
                         name == std::string(next) + ".idx" || sluice::io::is_atomic_temporary(name, next) ||
                         sluice::io::is_atomic_temporary(name, std::string(next) + ".idx");
    for (const auto& s : cut->shards) listed_or_tmp = listed_or_tmp || name == s.name || name == s.name + ".idx";
    INFO(name);
    CHECK(listed_or_tmp);
  }
  // sluice verify on the stopped conversion: the listed shards match, what
  // the writer left (*.tmp, the next shard not yet listed) is not a stray.
  CliResult stopped = run_cli({"verify", killed});
  CHECK(stopped.status == 1);
  CHECK_THAT(stopped.out, Contains("all " + std::to_string(cut->shards.size()) + " shards match") &&
                              Contains("not complete") && !Contains("not in the manifest"));
  // A run over it trains on part of the data set: a note says so.
  auto notes_over = [&](const std::string& folder) {
    const std::string reader = dir.write("read.lua", "local sluice = require('sluice')\nreturn sluice.pipeline { source = "
                                                     "sluice.tar{ '" + folder + "/*.tar' }, batch_size = 2,\n"
                                                     "  fields = { { 'n', 'int64' } },\n"
                                                     "  map = function(s) return { n = 1 } end }\n");
    std::string all;
    for (const std::string& note : sluice::load_script({.path = reader}).notes) all += note + "\n";
    return all;
  };
  CHECK_THAT(notes_over(killed), Contains(killed + " holds a conversion that is not finished") &&
                                     Contains("of 48; run the write again to finish it"));
  CHECK_THAT(notes_over(whole), !Contains("not finished"));
  // Another plan (shuffled, another seed) would put other samples after the
  // kept shards, repeating some and missing others: refused, naming what
  // differs and the ways out, and the folder is left as it was.
  const std::string before = file_text(killed + "/manifest.json");
  CliResult shuffled =
      run_cli({"write", pipeline, "--to", killed, "--shard-samples", "4", "--shuffle", "--seed", "5"});
  CHECK(shuffled.status == 1);
  CHECK_THAT(shuffled.err, Contains("another plan") && Contains("shuffle true (written with false)") &&
                               Contains("seed 5 (written with 0)") && Contains("settings it was written with") && Contains("new folder"));
  CHECK(file_text(killed + "/manifest.json") == before);
  // Another batch size, or an edited pipeline: refused too.
  CliResult batch = run_cli({"write", pipeline, "--to", killed, "--shard-samples", "4", "-b", "3"});
  CHECK(batch.status == 1);
  CHECK_THAT(batch.err, Contains("batch_size 3 (written with 2)"));
  const std::string edited = dir.write("edited.lua", file_text(pipeline) + "-- edited\n");
  CliResult script = run_cli({"write", edited, "--to", killed, "--shard-samples", "4"});
  CHECK(script.status == 1);
  CHECK_THAT(script.err, Contains("another plan") && Contains("script "));
  // A manifest from before plans were recorded cannot be resumed safely.
  const std::string old = dir.path() + "/old";
  fs::copy(killed, old);
  auto unplanned = *cut;
  unplanned.plan.clear();
  sluice::io::write_manifest(old, unplanned);
  CliResult older = run_cli({"write", pipeline, "--to", old, "--shard-samples", "4"});
  CHECK(older.status == 1);
  CHECK_THAT(older.err, Contains("records no plan") && Contains("new folder"));
  CHECK(file_text(killed + "/manifest.json") == before);
  // The worker count is not part of the plan: the shards are the same for any.
  CliResult resumed = run_cli({"write", pipeline, "--to", killed, "--shard-samples", "4", "-w", "1"});
  INFO(resumed.err);
  REQUIRE(resumed.status == 0);
  CHECK_THAT(resumed.err, Contains("resuming"));
  check_same_files(whole, killed);
  // Run again on a complete folder: nothing to do.
  CliResult again = run_cli({"write", pipeline, "--to", killed, "--shard-samples", "4"});
  CHECK(again.status == 0);
  CHECK_THAT(again.out, Contains("already written and complete"));
  CliResult reseeded = run_cli({"write", pipeline, "--to", killed, "--shard-samples", "4", "--seed", "9"});
  CHECK(reseeded.status == 1);
  CHECK_THAT(reseeded.err, Contains("seed 9 (written with 0)"));
  // Another shard size into the same folder is refused, clearly.
  CliResult other = run_cli({"write", pipeline, "--to", killed, "--shard-samples", "5"});
  CHECK(other.status == 1);
  CHECK_THAT(other.err, Contains("holds another conversion: its manifest.json has 4 samples a shard, not 5 samples a shard"));
}

TEST_CASE("sluice write: SIGTERM keeps the complete shards, says so and exits 143, and the same command goes on", "[cli][write]") {
  TempDir dir;
  const std::string pipeline = dir.write("slow.lua", R"(local sluice = require("sluice")
return sluice.pipeline {
  source = sluice.range(60), batch_size = 2, workers = 2,
  fields = { { "n", "int64" } },
  map = function(i, ctx)
    -- SLOW: the samples past the first shards take long enough that the
    -- SIGTERM below lands mid-write however loaded the machine is.
    local t = os.clock() + ((os.getenv("SLOW") and i >= 8) and 0.5 or 0.01)
    while os.clock() < t do end
    return { n = i * 3 }
  end,
}
)");
  const std::string whole = dir.path() + "/whole", out = dir.path() + "/out";
  REQUIRE(run_cli({"write", pipeline, "--to", whole, "--shard-samples", "4"}).status == 0);
  // As a preempted job gets it: once a shard is listed.
  const std::string script = "cd '" + dir.path() + "' && (SLOW=1 '" + SLUICE_CLI + "' write slow.lua --to out --shard-samples 4 "
                             "2> err & p=$!; while [ ! -s out/manifest.json ]; do sleep 0.01; done; kill -TERM $p; "
                             "wait $p; echo $? > rc)";
  REQUIRE(std::system(script.c_str()) == 0);
  CHECK(file_text(dir.path() + "/rc") == "143\n");
  const std::string err = file_text(dir.path() + "/err");
  CHECK_THAT(err, Contains("sluice write: stopped by SIGTERM: out keeps ") &&
                      Contains("run the same command again to go on from there"));
  CHECK(sluice::test::wait_for_no_descendants(5000).empty());
  const auto kept = sluice::io::read_manifest(out);
  REQUIRE(kept);
  CHECK_FALSE(kept->complete);
  for (const auto& e : fs::directory_iterator(out)) CHECK_FALSE(e.path().string().ends_with(".tmp"));
  const CliResult resumed = run_cli({"write", pipeline, "--to", out, "--shard-samples", "4"});
  INFO(resumed.err);
  REQUIRE(resumed.status == 0);
  check_same_files(whole, out);
}

TEST_CASE("sluice write: a corrupt shard is named by the readers and by sluice verify", "[cli][write]") {
  TempDir dir;
  const std::string pipeline = dir.write("p.lua", R"(local sluice = require("sluice")
return sluice.pipeline {
  source = sluice.range(20), batch_size = 4, workers = 1,
  fields = { { "v", "int32", { 8 } } },
  map = function(i, ctx) for k = 0, 7 do ctx.out.v.data[k] = i * k end return { v = ctx.out.v } end,
}
)");
  const std::string out = dir.path() + "/out";
  REQUIRE(run_cli({"write", pipeline, "--to", out, "--shard-samples", "5"}).status == 0);
  CHECK(run_cli({"verify", out}).status == 0);
  {
    std::fstream f(out + "/shard-000002.tar", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(700);
    f.put('\x7f');
  }
  CliResult verify = run_cli({"verify", out});
  CHECK(verify.status == 1);
  CHECK_THAT(verify.out, Contains("shard-000002.tar: checksum"));
  CHECK_THAT(verify.out, Contains("1 of 4 shards"));
  const std::string reader = dir.write("read.lua", R"(local sluice = require("sluice")
return sluice.pipeline {
  source = sluice.tar{ "out/*.tar" }, batch_size = 4,
  map = function(s, ctx) return { n = s.fields["v.npy"].nbytes } end,
}
)");
  CliResult read = run_cli({"run", reader, "--quiet"});
  CHECK(read.status == 1);
  CHECK_THAT(read.err, Contains("corrupt shard") && Contains("shard-000002.tar"));
  CliResult inspect = run_cli({"inspect", out});
  CHECK(inspect.status == 0);
  CHECK_THAT(inspect.out, Contains("4 tar shards") && Contains("20 samples") && Contains("int32[8]"));
}

TEST_CASE("sluice verify: a shard-like file the manifest does not list is named", "[cli][write]") {
  TempDir dir;
  const std::string pipeline = dir.write("p.lua", R"(local sluice = require("sluice")
return sluice.pipeline {
  source = sluice.range(10), batch_size = 5, workers = 1,
  fields = { { "v", "int64" } },
  map = function(i, ctx) return { v = i } end,
}
)");
  for (const std::string format : {"tar", "tfrecord"}) {
    INFO(format);
    const std::string out = dir.path() + "/" + format;
    REQUIRE(run_cli({"write", pipeline, "--to", out, "--format", format, "--shard-samples", "5"}).status == 0);
    CliResult clean = run_cli({"verify", out});
    INFO(clean.out);
    CHECK(clean.status == 0);  // the manifest and (TFRecord) the listed shards' indexes are not strays
    // A copied shard beside the listed ones: a reader of out/*.EXT would read its samples twice.
    const std::string copy = "shard-000009." + format;
    fs::copy_file(out + "/shard-000001." + format, out + "/" + copy);
    fs::copy_file(out + "/shard-000001." + format, out + "/extra." + format);
    CliResult stray = run_cli({"verify", out});
    INFO(stray.out);
    CHECK(stray.status == 1);
    CHECK_THAT(stray.out, Contains(copy + ": not in the manifest") && Contains("extra." + format + ": not in") &&
                              Contains("2 files in " + out + " not listed"));
    // A complete conversion has no temporary files: one left is named too.
    fs::remove(out + "/" + copy);
    fs::remove(out + "/extra." + format);
    { std::ofstream(out + "/shard-000002." + format + ".tmp") << "x"; }
    CliResult tmp = run_cli({"verify", out});
    CHECK(tmp.status == 1);
    CHECK_THAT(tmp.out, Contains("shard-000002." + format + ".tmp: not in the manifest") &&
                            Contains("1 file in"));
  }
}

TEST_CASE("sluice write: skipped samples are listed with their reasons and in --skip-log", "[cli][write]") {
  TempDir dir;
  const std::string pipeline = dir.write("p.lua", R"(local sluice = require("sluice")
return sluice.pipeline {
  source = sluice.range(12), batch_size = 4, workers = 1, on_error = "skip",
  fields = { { "v", "int64" } },
  map = function(i, ctx)
    if i == 3 or i == 7 then error("sample " .. i .. " is bad") end
    return { v = i }
  end,
}
)");
  const std::string log = dir.path() + "/skips.jsonl";
  CliResult r = run_cli({"write", pipeline, "--to", dir.path() + "/out", "--shard-samples", "4", "--skip-log", log});
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.out, Contains("skipped 2 samples (on_error = \"skip\"): ids 3, 7") && Contains("sample 3: ") &&
                        Contains("sample 3 is bad") && Contains("sample 7 is bad"));
  const auto lines = sluice::test::read_lines(log);
  REQUIRE(lines.size() == 2);
  CHECK_THAT(lines[0], Contains("\"sample\":3,") && Contains("sample 3 is bad"));
  CHECK_THAT(lines[1], Contains("\"sample\":7,") && Contains("sample 7 is bad"));
  const auto manifest = sluice::io::read_manifest(dir.path() + "/out");
  REQUIRE(manifest);
  CHECK(manifest->samples() == 10);
  // One skipped sample: "1 sample".
  const std::string one = dir.write("one.lua", R"(local sluice = require("sluice")
return sluice.pipeline {
  source = sluice.range(6), batch_size = 3, workers = 1, on_error = "skip",
  fields = { { "v", "int64" } },
  map = function(i, ctx)
    if i == 4 then error("four") end
    return { v = i }
  end,
}
)");
  CliResult single = run_cli({"write", one, "--to", dir.path() + "/one", "--shard-samples", "4"});
  INFO(single.out << single.err);
  REQUIRE(single.status == 0);
  CHECK_THAT(single.out, Contains("skipped 1 sample (on_error = \"skip\"): ids 4"));
}

TEST_CASE("sluice write: usage errors", "[cli][write]") {
  TempDir dir;
  const std::string pipeline = dir.write("p.lua", "return require('sluice').pipeline{ source = require('sluice').range(4) }\n");
  CliResult ftp = run_cli({"write", pipeline, "--to", "ftp://host/x"});
  CHECK(ftp.status == 2);
  CHECK_THAT(ftp.err, Contains("only local folders and s3://, http:// and https:// URLs can be written"));
  CHECK(run_cli({"write", pipeline, "--to", dir.path() + "/o", "--staging", dir.path() + "/s"}).status == 2);
  CHECK(run_cli({"write", pipeline}).status == 2);
  CHECK(run_cli({"write", pipeline, "--to", dir.path() + "/o", "--format", "zip"}).status == 2);
  CHECK(run_cli({"write", pipeline, "--to", dir.path() + "/o", "--shard-size", "12XB"}).status == 2);
}

#else
TEST_CASE("sluice write", "[cli][write]") { SKIP_TEST("the sluice executable was not built"); }
#endif
