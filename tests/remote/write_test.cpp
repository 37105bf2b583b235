// `sluice write --to s3://...` against s3rver on 127.0.0.1, end to end
// through the command line: the objects are the bytes a local write gives
// (shards, their indexes, the manifest), large shards go up as multipart
// uploads, the shards read back through sluice.tar / sluice.tfrecord over
// s3:// (lazily: indexes at open, shards by the workers) give the local
// shards' run records, a write killed with SIGKILL resumes to the
// uninterrupted result, the store's refusals are named, a shard changed in
// the store fails its manifest checksum when read, and --remote-retries
// governs the uploads.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "fault_proxy.h"
#include "servers.h"
#include "skip.h"
#include "sluice/error.h"
#include "sluice/io/manifest.h"
#include "sluice/io/shard_writer.h"
#include "sluice/remote/upload.h"

using namespace sluice::test;
namespace fs = std::filesystem;

namespace {

// 40 samples: an int32[8] and a blob of 20-60 kB; $SPIN_MS of work each.
std::string generator() {
  return "local sluice = require('sluice')\n"
         "return sluice.pipeline {\n"
         "  source = sluice.range(40), batch_size = 4, workers = 1, seed = 3,\n"
         "  fields = { { 'v', 'int32', { 8 } }, { 'blob', 'bytes', 100000 } },\n"
         "  map = function(i, ctx)\n"
         "    local t, spin = os.clock(), tonumber(os.getenv('SPIN_MS') or '0') / 1000\n"
         "    while os.clock() - t < spin do end\n"
         "    for k = 0, 7 do ctx.out.v.data[k] = i * k end\n"
         "    return { v = ctx.out.v, blob = string.rep(string.char(65 + i % 26), 20000 + (i * 7919) % 40000) }\n"
         "  end,\n"
         "}\n";
}

std::string read_tar(const std::string& source) {
  return "local sluice = require('sluice')\n"
         "return sluice.pipeline {\n"
         "  source = sluice.tar { '" + source + "' }, batch_size = 5, workers = 1,\n"
         "  fields = { { 'key', 'int64' }, { 'n', 'int32' }, { 'first', 'int32' } },\n"
         "  map = function(s, ctx)\n"
         "    return { key = tonumber(s.key), n = s.fields.blob.nbytes, first = s.fields.blob.data[0] }\n"
         "  end,\n"
         "}\n";
}

std::string read_tfrecord(const std::string& source) {
  return "local ffi = require('ffi')\n"
         "local sluice = require('sluice')\n"
         "return sluice.pipeline {\n"
         "  source = sluice.tfrecord { '" + source + "' }, batch_size = 5, workers = 1,\n"
         "  fields = { { 'key', 'int64' }, { 'n', 'int32' }, { 'v7', 'int64' } },\n"
         "  map = function(s, ctx)\n"
         "    local ex = sluice.example(s)\n"
         "    local key = ex:bytes('__key__')\n"
         "    return { key = tonumber(ffi.string(key.data, key.nbytes)), n = ex:bytes('blob').nbytes,\n"
         "             v7 = ex:int64s('v').data[7] }\n"
         "  end,\n"
         "}\n";
}

sluice::remote::UploadOptions store(const S3rver& s3) {
  sluice::remote::UploadOptions o;
  o.transfer.s3.endpoint = s3.endpoint();
  o.transfer.s3.path_style = true;
  o.transfer.s3.credentials = {.access_key = "S3RVER", .secret_key = "S3RVER", .session_token = "", .source = "test"};
  return o;
}

// Every file of the local folder `dir` is the object PREFIX + its name, byte for byte.
void check_same_objects(const std::string& dir, const std::string& prefix, const S3rver& s3) {
  std::size_t files = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    INFO(prefix + name);
    const auto r = sluice::remote::fetch({.url = prefix + name}, store(s3).transfer);
    REQUIRE(r.ok());
    CHECK(r.body == read_file(e.path().string()));
    ++files;
  }
  CHECK(files >= 3);
}

struct Setup {
  S3rver s3{temp_dir("s3"), "bkt"};
  std::string work = temp_dir("write");
  std::string env = "SLUICE_CACHE_DIR=cache AWS_ENDPOINT_URL=" + s3.endpoint() +
                    " AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER AWS_REGION=us-east-1 ";
};

}  // namespace

TEST_CASE("Write: tar and TFRecord shards to s3:// are the local write's bytes and read back the same") {
  if (cli().empty()) SKIP_TEST(kNoCli);
  if (!S3rver::why_not().empty()) SKIP_TEST(S3rver::why_not());
  Setup setup;
  const std::string &work = setup.work, &env = setup.env;
  write_file(work + "/gen.lua", generator());
  // Shards of about 400 kB: multipart uploads (of one part); indexes and the manifest: one PUT.
  const std::string multipart = "SLUICE_S3_MULTIPART_THRESHOLD=200000 ";
  for (const std::string format : {"tar", "tfrecord"}) {
    INFO(format);
    Run r = sh(work, cli() + " write gen.lua --to local-" + format + " --format " + format + " --shard-samples 10");
    INFO(r.out);
    REQUIRE(r.status == 0);
    r = sh(work, env + multipart + cli() + " write gen.lua --to s3://bkt/ds/" + format + " --format " + format +
                     " --shard-samples 10");
    INFO(r.out);
    REQUIRE(r.status == 0);
    check_same_objects(work + "/local-" + format, "s3://bkt/ds/" + format + "/", setup.s3);
    // The staging folder is gone with the shards.
    CHECK(fs::is_empty(work + "/cache/write"));
    const std::string glob = format == "tar" ? "/*.tar" : "/*.tfrecord";
    write_file(work + "/local-read.lua", format == "tar" ? read_tar("local-tar" + glob)
                                                         : read_tfrecord("local-tfrecord" + glob));
    write_file(work + "/s3-read.lua", format == "tar" ? read_tar("s3://bkt/ds/tar" + glob)
                                                      : read_tfrecord("s3://bkt/ds/tfrecord" + glob));
    r = sh(work, cli() + " run local-read.lua --quiet --record local-" + format + ".jsonl");
    INFO(r.out);
    REQUIRE(r.status == 0);
    r = sh(work, env + cli() + " run s3-read.lua --record s3-" + format + ".jsonl");
    INFO(r.out);
    REQUIRE(r.status == 0);
    // Each shard's index is beside it: only those are fetched at open.
    CHECK_THAT(r.out, Catch::Contains("the workers fetch the others as the plan needs them"));
    r = sh(work, cli() + " verify local-" + format);  // the indexes are no unlisted files
    INFO(r.out);
    CHECK(r.status == 0);
    r = sh(work, cli() + " verify local-" + format + ".jsonl s3-" + format + ".jsonl");
    INFO(r.out);
    CHECK(r.status == 0);
    // Again: the store's manifest says complete, nothing is written.
    r = sh(work, env + cli() + " write gen.lua --to s3://bkt/ds/" + format + " --format " + format +
                     " --shard-samples 10");
    CHECK(r.status == 0);
    CHECK_THAT(r.out, Catch::Contains("already written and complete"));
  }
  // --cache-dir (the run setting cache_dir) is where the shards are staged,
  // as it is where remote shards are read into.
  const Run r = sh(work, env + cli() + " write gen.lua --to s3://bkt/ds/staged --shard-samples 10 --cache-dir other");
  INFO(r.out);
  REQUIRE(r.status == 0);
  CHECK(fs::is_directory(work + "/other/write"));
  CHECK(fs::is_empty(work + "/other/write"));
}

TEST_CASE("Write: tar shards to http:// (a server taking PUT) are the local write's bytes, read back, resumed") {
  if (cli().empty()) SKIP_TEST(kNoCli);
  if (!Nginx::why_not().empty()) SKIP_TEST(Nginx::why_not());
  const std::string root = temp_dir("www"), work = temp_dir("write");
  Nginx nginx(root);
  write_file(work + "/gen.lua", generator());
  Run r = sh(work, cli() + " write gen.lua --to local --shard-samples 10");
  REQUIRE(r.status == 0);
  const std::string url = nginx.url("ds/");
  r = sh(work, "SLUICE_CACHE_DIR=cache " + cli() + " write gen.lua --to " + url + " --shard-samples 10");
  INFO(r.out);
  REQUIRE(r.status == 0);
  std::size_t files = 0;
  for (const auto& e : fs::directory_iterator(work + "/local")) {
    INFO(e.path().filename().string());
    CHECK(read_file(root + "/ds/" + e.path().filename().string()) == read_file(e.path().string()));
    ++files;
  }
  CHECK(files == 9);  // 4 shards, their indexes and the manifest
  CHECK(nginx.requests("PUT", "/ds/manifest.json") >= 1);
  write_file(work + "/local-read.lua", read_tar("local/*.tar"));
  write_file(work + "/http-read.lua", read_tar(url + "shard-{000000..000003}.tar"));
  r = sh(work, cli() + " run local-read.lua --quiet --record local.jsonl");
  INFO(r.out);
  REQUIRE(r.status == 0);
  r = sh(work, "SLUICE_CACHE_DIR=cache " + cli() + " run http-read.lua --record http.jsonl");
  INFO(r.out);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.out, Catch::Contains("the workers fetch the others as the plan needs them"));
  CHECK(sh(work, cli() + " verify local.jsonl http.jsonl").status == 0);
  // The server's manifest says complete: a rerun writes nothing.
  const int puts = nginx.requests("PUT", "/ds/shard-000000.tar");
  r = sh(work, "SLUICE_CACHE_DIR=cache " + cli() + " write gen.lua --to " + url + " --shard-samples 10");
  CHECK(r.status == 0);
  CHECK_THAT(r.out, Catch::Contains("already written and complete"));
  CHECK(nginx.requests("PUT", "/ds/shard-000000.tar") == puts);
}

TEST_CASE("Write: a write to s3:// killed with SIGKILL resumes to the uninterrupted run's objects") {
  if (cli().empty()) SKIP_TEST(kNoCli);
  if (!S3rver::why_not().empty()) SKIP_TEST(S3rver::why_not());
  Setup setup;
  const std::string &work = setup.work, &env = setup.env;
  write_file(work + "/gen.lua", generator());
  Run r = sh(work, cli() + " write gen.lua --to whole --shard-samples 4");
  INFO(r.out);
  REQUIRE(r.status == 0);

  const std::string url = "s3://bkt/killed/";
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::execl("/bin/sh", "sh", "-c",
            ("cd '" + work + "' && exec env " + env + "SPIN_MS=50 " + cli() + " write gen.lua --to " + url +
             " --shard-samples 4 > killed.log 2>&1").c_str(),
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  sluice::remote::UploadOptions poll = store(setup.s3);
  // s3rver may fail, cut or stall a GET of an object being rewritten: give up on it soon, ask again.
  poll.transfer.max_retries = 0;
  poll.transfer.stall_timeout_ms = 200;
  sluice::remote::Uploader up(poll);
  std::size_t listed = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline && listed < 3) {
    try {
      if (auto text = up.get_text(url + "manifest.json"))
        listed = sluice::io::Manifest::from_json(*text, url).shards.size();
    } catch (const sluice::Error&) {  // s3rver (unlike S3) lets a GET see a PUT half written
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  REQUIRE(listed >= 3);
  const auto cut = sluice::io::Manifest::from_json(*up.get_text(url + "manifest.json"), url);
  REQUIRE_FALSE(cut.complete);  // killed before the end (each sample takes 50 ms of work)
  // Resumed with another plan: refused by the store's manifest, which stays as it was.
  r = sh(work, env + cli() + " write gen.lua --to " + url + " --shard-samples 4 --seed 4");
  CHECK(r.status == 1);
  CHECK_THAT(r.out, Catch::Contains(url + " was written with another plan") &&
                        Catch::Contains("seed 4 (written with 3)"));
  CHECK(*up.get_text(url + "manifest.json") == cut.to_json());
  r = sh(work, env + cli() + " write gen.lua --to " + url + " --shard-samples 4");
  INFO(r.out);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.out, Catch::Contains("resuming " + url + ": "));
  // The shards the store's manifest listed at the kill were kept, not written again.
  const std::size_t at = r.out.find("resuming " + url + ": ");
  REQUIRE(at != std::string::npos);
  CHECK(std::stoul(r.out.substr(at + url.size() + 11)) == cut.shards.size());
  check_same_objects(work + "/whole", url, setup.s3);
  CHECK(fs::is_empty(work + "/cache/write"));  // the killed run's staged shard went with the resumed run
}

TEST_CASE("Write: an unknown bucket, a refused key and an unreachable server are one clear error each") {
  if (cli().empty()) SKIP_TEST(kNoCli);
  if (!S3rver::why_not().empty()) SKIP_TEST(S3rver::why_not());
  Setup setup;
  const std::string& work = setup.work;
  write_file(work + "/gen.lua", generator());
  const std::string base = "SLUICE_CACHE_DIR=cache AWS_ENDPOINT_URL=" + setup.s3.endpoint() + " AWS_REGION=us-east-1 ";
  Run r = sh(work, base + "AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER " + cli() +
                       " write gen.lua --to s3://nobucket/ds/");
  CHECK(r.status == 1);
  CHECK_THAT(r.out, Catch::Contains("cannot write to s3://nobucket/ds/: s3://nobucket/ds/manifest.json: HTTP 404 "
                                    "(NoSuchBucket: The specified bucket does not exist)"));
  r = sh(work, base + "AWS_ACCESS_KEY_ID=NOBODY AWS_SECRET_ACCESS_KEY=x " + cli() + " write gen.lua --to s3://bkt/ds/");
  CHECK(r.status == 1);
  CHECK_THAT(r.out, Catch::Contains("cannot write to s3://bkt/ds/: s3://bkt/ds/manifest.json: HTTP 403 "
                                    "(InvalidAccessKeyId: "));
  r = sh(work, "SLUICE_CACHE_DIR=cache " + cli() + " write gen.lua --to http://127.0.0.1:1/ds/");
  CHECK(r.status == 1);
  CHECK_THAT(r.out, Catch::Contains("cannot write to http://127.0.0.1:1/ds/: http://127.0.0.1:1/ds/manifest.json"));
  r = sh(work, cli() + " write gen.lua --to ftp://example.com/ds/");
  CHECK(r.status == 2);
  CHECK_THAT(r.out, Catch::Contains("only local folders and s3://, http:// and https:// URLs can be written"));
}

TEST_CASE("Write: a shard the store refuses stops the writer with the store's message, and no manifest lists it") {
  if (!S3rver::why_not().empty()) SKIP_TEST(S3rver::why_not());
  S3rver s3(temp_dir("s3"), "bkt");
  const std::string staging = temp_dir("staging");
  sluice::io::ShardWriterOptions o{.dir = "s3://bkt/ds", .format = "tar", .shard_samples = 2, .shard_bytes = 0,
                                   .fields = {{"blob", "bytes", {}, ""}}, .staging = staging};
  const std::string blob = random_bytes(1000, 9);
  const std::span<const std::byte> value(reinterpret_cast<const std::byte*>(blob.data()), blob.size());
  auto add = [&](sluice::io::ShardWriter& w, std::uint64_t id) { w.add(id, std::span(&value, 1), id + 1, 0); };
  std::string error;
  {
    S3Environment good(s3.endpoint());
    sluice::io::ShardWriter w(o);  // reads the store's manifest: none
    // The publications make their own connection, after this: with a key the store refuses.
    S3Environment refused(s3.endpoint(), "NOBODY");
    for (std::uint64_t id = 0; id < 3; ++id) add(w, id);  // the third sample ends shard 0: its upload starts
    try {
      w.finish();
    } catch (const sluice::Error& e) {
      error = e.what();
    }
  }
  // The shard's index goes up first (so a shard in the store has its index).
  CHECK_THAT(error, Catch::Contains("cannot upload " + staging + "/shard-000000.tar.idx: s3://bkt/ds/shard-000000.tar.idx: "
                                    "HTTP 403 (InvalidAccessKeyId: "));
  sluice::remote::Uploader up(store(s3));
  CHECK_FALSE(up.get_text("s3://bkt/ds/manifest.json"));
  // Written again with the right key: whole.
  S3Environment good(s3.endpoint());
  sluice::io::ShardWriter w(o);
  CHECK(w.shards_kept() == 0);
  for (std::uint64_t id = 0; id < 3; ++id) add(w, id);
  CHECK(w.finish().shards.size() == 2);
  const auto m = sluice::io::Manifest::from_json(*up.get_text("s3://bkt/ds/manifest.json"), "store");
  CHECK(m.complete);
  CHECK(up.object_size("s3://bkt/ds/shard-000001.tar") == std::optional<std::uint64_t>(m.shards[1].bytes));
  CHECK(fs::is_empty(staging));  // the shards went up and were deleted here
}

TEST_CASE("Write: a shard changed in the store after it was written is refused by the manifest's checksum, never cached") {
  if (cli().empty()) SKIP_TEST(kNoCli);
  if (!S3rver::why_not().empty()) SKIP_TEST(S3rver::why_not());
  Setup setup;
  const std::string& work = setup.work;
  write_file(work + "/gen.lua", generator());
  for (const std::string format : {"tar", "tfrecord"}) {
    INFO(format);
    const std::string prefix = "s3://bkt/" + format + "/";
    Run r = sh(work, setup.env + cli() + " write gen.lua --to " + prefix + " --format " + format +
                         " --shard-samples 10");
    INFO(r.out);
    REQUIRE(r.status == 0);
    const std::string shard = "shard-000001." + format;
    sluice::remote::Uploader up(store(setup.s3));
    const std::string good = *up.get_text(prefix + shard);
    std::string bad = good;
    bad[bad.size() / 2] = static_cast<char>(bad[bad.size() / 2] ^ 0x20);  // same size, one bit of a blob
    setup.s3.put(format + "/" + shard, bad);
    const std::string cache = work + "/cache-" + format;
    fs::remove_all(cache);
    write_file(work + "/read.lua", format == "tar" ? read_tar(prefix + "shard-{000000..000003}.tar")
                                                   : read_tfrecord(prefix + "shard-{000000..000003}.tfrecord"));
    // tfrecord: the indexes lie beside the shards, so the workers fetch them (the lazy path).
    r = sh(work, setup.env + "SLUICE_CACHE_DIR=" + cache + " " + cli() + " run read.lua --quiet --remote-retries 1");
    INFO(r.out);
    CHECK(r.status == 1);
    CHECK_THAT(r.out, Catch::Contains("corrupt shard: " + prefix + shard + ": checksum xxh3:") &&
                          Catch::Contains("does not match the manifest's xxh3:"));
    for (const auto& e : fs::directory_iterator(cache)) {
      const std::string name = e.path().filename().string();
      CHECK_FALSE((name.size() > shard.size() && name.substr(name.size() - shard.size()) == shard &&
                   name[name.size() - shard.size() - 1] == '-'));  // no whole copy of the bad object
      CHECK(name.find(shard + ".partial") == std::string::npos);
    }
    setup.s3.put(format + "/" + shard, good);  // put back: the same command reads every sample
    r = sh(work, setup.env + "SLUICE_CACHE_DIR=" + cache + " " + cli() + " run read.lua --quiet --record ok.jsonl");
    INFO(r.out);
    CHECK(r.status == 0);
  }
}

TEST_CASE("Write: --remote-retries is what the uploads retry with") {
  if (cli().empty()) SKIP_TEST(kNoCli);
  if (!Nginx::why_not().empty()) SKIP_TEST(Nginx::why_not());
  const std::string root = temp_dir("www"), work = temp_dir("write");
  Nginx nginx(root);
  write_file(work + "/gen.lua", generator());
  {
    // The manifest's GET passes; the first PUT (the first shard's index) meets a 503.
    FaultProxy proxy(nginx.port(), {Fault::pass, Fault::status_503});
    const Run r = sh(work, "SLUICE_CACHE_DIR=cache " + cli() + " write gen.lua --to " + proxy.url("a/") +
                               " --shard-samples 10 --remote-retries 0");
    INFO(r.out);
    CHECK(r.status == 1);
    CHECK_THAT(r.out, Catch::Contains("a/shard-000000.tar.idx: ") && Catch::Contains("(gave up after 0 retries)"));
  }
  {
    FaultProxy proxy(nginx.port(), {Fault::pass, Fault::status_503, Fault::status_503});
    const Run r = sh(work, "SLUICE_CACHE_DIR=cache " + cli() + " write gen.lua --to " + proxy.url("b/") +
                               " --shard-samples 10 --remote-retries 2");
    INFO(r.out);
    CHECK(r.status == 0);
    CHECK(fs::exists(root + "/b/manifest.json"));
  }
}

TEST_CASE("Write: an s3:// prefix holding other objects and no manifest is refused, as a folder is") {
  if (cli().empty()) SKIP_TEST(kNoCli);
  if (!S3rver::why_not().empty()) SKIP_TEST(S3rver::why_not());
  Setup setup;
  write_file(setup.work + "/gen.lua", generator());
  setup.s3.put("mine/notes.txt", "a user's file");
  Run r = sh(setup.work, setup.env + cli() + " write gen.lua --to s3://bkt/mine/ --shard-samples 10");
  CHECK(r.status == 1);
  CHECK_THAT(r.out, Catch::Contains("s3://bkt/mine/ is not empty and has no manifest.json (it holds notes.txt); "
                                    "write to an empty or new prefix"));
  // A shard of a run killed before its first manifest is ours: redone.
  setup.s3.put("redo/shard-000000.tar", "cut");
  r = sh(setup.work, setup.env + cli() + " write gen.lua --to s3://bkt/redo/ --shard-samples 10");
  INFO(r.out);
  CHECK(r.status == 0);
}
