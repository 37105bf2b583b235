// Sources over remote paths, end to end through the `sluice` command line:
// the same pipeline over local files, http:// (nginx) and s3:// (s3rver)
// writes identical run records, with 1 and 2 workers and 2 ranks sharing one
// cache; a warm cache makes no data request (one conditional HEAD an object),
// and an object changed in the store is downloaded again.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdlib>
#include <fstream>

#include "fault_proxy.h"
#include "servers.h"
#include "skip.h"

using namespace sluice::test;

namespace {

constexpr int kShards = 4, kPerShard = 12;

// Shards of WebDataset tar: samples NNN with NNN.txt and NNN.cls, by tar(1).
std::string make_shards() {
  const std::string dir = temp_dir("shards"), members = temp_dir("members");
  for (int s = 0; s < kShards; ++s) {
    std::string names;
    for (int i = 0; i < kPerShard; ++i) {
      const std::string key = std::to_string(1000 + s * kPerShard + i);
      write_file(members + "/" + key + ".txt", "sample " + key + random_bytes(50 + i, i));
      write_file(members + "/" + key + ".cls", std::to_string(i % 3));
      names += " " + key + ".txt " + key + ".cls";
    }
    char shard[64];
    std::snprintf(shard, sizeof shard, "/train-%06d.tar", s);
    if (std::system(("tar -cf '" + dir + shard + "' -C '" + members + "'" + names).c_str()) != 0)
      throw std::runtime_error("tar failed");
  }
  return dir;
}

std::string pipeline(const std::string& source) {
  return "local sluice = require('sluice')\n"
         "local ffi = require('ffi')\n"
         "return sluice.pipeline {\n"
         "  source = sluice.tar { '" + source + "' },\n"
         "  fields = { { 'key', 'int32' }, { 'cls', 'int32' }, { 'len', 'int32' } },\n"
         "  map = function(s, ctx)\n"
         "    return { key = tonumber(s.key), cls = tonumber(ffi.string(s.fields.cls.data, s.fields.cls.nbytes)),\n"
         "             len = s.fields.txt.nbytes }\n"
         "  end,\n"
         "  batch_size = 5, shuffle = true, seed = 11, epochs = 2,\n"
         "}\n";
}

// The shards of make_shards, served by nginx and by s3rver (bucket bkt,
// prefix train/), with local.lua, http.lua and s3.lua over them in `work`.
struct Stores {
  std::string shards = make_shards(), work = temp_dir("run");
  Nginx http{shards};
  S3rver s3{temp_dir("s3"), "bkt"};
  std::string s3env = s3_env(s3);
  Stores() {
    s3.upload(shards, "train/");
    write_file(work + "/local.lua", pipeline(shards + "/train-*.tar"));
    write_file(work + "/http.lua", pipeline(http.url("train-{000000..000003}.tar")));
    write_file(work + "/s3.lua", pipeline("s3://bkt/train/*.tar"));
  }
};

}  // namespace

TEST_CASE("Sources: tar shards over local files, http:// and s3:// give identical run records") {
  if (cli().empty()) SKIP_TEST(kNoCli);
  if (!Nginx::why_not().empty()) SKIP_TEST(Nginx::why_not());
  if (!S3rver::why_not().empty()) SKIP_TEST(S3rver::why_not());
  Stores stores;
  const std::string &work = stores.work, &s3env = stores.s3env;
  Nginx& http = stores.http;

  check_same_records(work, s3env);
  Run r;
  // Each shard was fetched once per cold cache (two caches), never again.
  for (int s = 0; s < kShards; ++s) {
    char uri[64];
    std::snprintf(uri, sizeof uri, "/train-%06d.tar", s);
    CHECK(http.requests("GET", uri) == 2);
  }
  // A warm cache: no data request, one conditional HEAD per object
  // (revalidation), one GET of the folder's manifest.json (none here: 404)
  // and the GET of the first shard's index (URL.idx), which these shards
  // lack (the whole data set is then fetched at open).
  const std::size_t before = http.log().size();
  const int manifests = http.requests("GET", "/manifest.json");
  r = sh(work, "SLUICE_CACHE_DIR=cache-http1 " + cli() + " run http.lua --quiet --record warm.jsonl");
  INFO(r.out);
  REQUIRE(r.status == 0);
  CHECK(http.log().size() == before + kShards + 2);
  CHECK(http.requests("GET", "/manifest.json") == manifests + 1);
  CHECK(http.requests("GET", "/train-000000.tar.idx") == 3);
  for (int s = 0; s < kShards; ++s) {
    char uri[64];
    std::snprintf(uri, sizeof uri, "/train-%06d.tar", s);
    CHECK(http.requests("GET", uri) == 2);
    CHECK(http.requests("HEAD", uri) == 1);
  }
  CHECK(sh(work, cli() + " verify local.jsonl warm.jsonl").status == 0);
}

TEST_CASE("Sources: two ranks on one node share one cache and download each shard once") {
  if (cli().empty()) SKIP_TEST(kNoCli);
  if (!Nginx::why_not().empty()) SKIP_TEST(Nginx::why_not());
  const std::string shards = make_shards(), work = temp_dir("run");
  Nginx http(shards, "1m");  // slow enough that the ranks overlap
  write_file(work + "/local.lua", pipeline(shards + "/train-*.tar"));
  write_file(work + "/http.lua", pipeline(http.url("train-{000000..000003}.tar")));
  check_two_ranks(work);
  for (int s = 0; s < kShards; ++s) {
    char uri[64];
    std::snprintf(uri, sizeof uri, "/train-%06d.tar", s);
    CHECK(http.requests("GET", uri) == 1);
  }
}

TEST_CASE("Sources: a missing shard, an unknown bucket and a refused key are one clear error each") {
  if (cli().empty()) SKIP_TEST(kNoCli);
  if (!Nginx::why_not().empty()) SKIP_TEST(Nginx::why_not());
  if (!S3rver::why_not().empty()) SKIP_TEST(S3rver::why_not());
  const std::string work = temp_dir("run"), root = temp_dir("www");
  Nginx http(root);
  S3rver s3(temp_dir("s3"), "bkt");
  write_file(work + "/missing.lua", pipeline(http.url("nope-{0..1}.tar")));
  write_file(work + "/bucket.lua", pipeline("s3://nobucket/train/*.tar"));
  write_file(work + "/key.lua", pipeline("s3://bkt/x.tar"));
  const std::string s3env = "SLUICE_CACHE_DIR=cache AWS_ENDPOINT_URL=" + s3.endpoint() + " AWS_REGION=us-east-1 ";
  Run r = sh(work, "SLUICE_CACHE_DIR=cache " + cli() + " run missing.lua --quiet");
  CHECK(r.status != 0);
  CHECK_THAT(r.out, Catch::Contains("sluice.tar: " + http.url("nope-0.tar") + ": HTTP 404"));
  r = sh(work, s3env + "AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER " + cli() + " run bucket.lua --quiet");
  CHECK(r.status != 0);
  CHECK_THAT(r.out, Catch::Contains("cannot list s3://nobucket/train/: s3://nobucket/: HTTP 404 (NoSuchBucket: The "
                                    "specified bucket does not exist)"));
  r = sh(work, s3env + "AWS_ACCESS_KEY_ID=NOBODY AWS_SECRET_ACCESS_KEY=x " + cli() + " run key.lua --quiet");
  CHECK(r.status != 0);
  CHECK_THAT(r.out, Catch::Contains("s3://bkt/x.tar: HTTP 403 (InvalidAccessKeyId: "));
  // A store that is down: the settings bound the retries.
  http.stop();
  r = sh(work, "SLUICE_CACHE_DIR=cache " + cli() + " run missing.lua --quiet --remote-retries 1 --remote-timeout-ms 500");
  CHECK(r.status != 0);
  CHECK_THAT(r.out, Catch::Contains(": Couldn't connect to server (gave up after 1 retries)"));
  // The first request names what the user gave, though it asks for the folder's manifest.
  CHECK_THAT(r.out, Catch::Contains("sluice.tar: " + http.url("nope-0.tar") + ": cannot reach the store: "));
}

TEST_CASE("Sources: the summary counts downloads, says network-bound, and warns of a cache_limit_mb below the data") {
  if (cli().empty()) SKIP_TEST(kNoCli);
  if (!Nginx::why_not().empty()) SKIP_TEST(Nginx::why_not());
  const std::string root = temp_dir("www"), work = temp_dir("run");
  // Four shards of about 0.4 MiB each; a budget of 1 MiB.
  for (int s = 0; s < 4; ++s) {
    const std::string members = temp_dir("members");
    write_file(members + "/" + std::to_string(100 + s) + ".txt", random_bytes(400'000, s));
    write_file(members + "/" + std::to_string(100 + s) + ".cls", "1");
    const std::string key = std::to_string(100 + s);
    REQUIRE(std::system(("tar -cf '" + root + "/t" + std::to_string(s) + ".tar' -C '" + members + "' " + key +
                         ".txt " + key + ".cls").c_str()) == 0);
  }
  Nginx http(root, "500k");  // 0.8 s a shard, four at once: longer than the run
  write_file(work + "/p.lua", pipeline(http.url("t{0..3}.tar")));
  Run r = sh(work, "SLUICE_CACHE_DIR=cache " + cli() + " run p.lua --cache-limit-mb 1 --trace t.json");
  INFO(r.out);
  CHECK(r.status == 0);
  // --trace: one span per download, on tracks of their own, in valid JSON.
  const std::string trace = read_file(work + "/t.json");
  CHECK(sh(work, "/usr/bin/python3 -c 'import json; json.load(open(\"t.json\"))'").status == 0);
  int spans = 0;
  for (std::size_t at = 0; (at = trace.find("\"name\":\"download\"", at)) != std::string::npos; ++at) ++spans;
  CHECK(spans == 4);
  CHECK_THAT(trace, Catch::Contains("\"url\":\"" + http.url("t0.tar") + "\""));
  CHECK_THAT(trace, Catch::Contains("\"args\":{\"name\":\"download 3\"}"));
  CHECK_THAT(r.out, Catch::Contains("pass cache_limit_mb (1 MiB)"));
  // The first shard's index asked for (no shard has one), not counted.
  CHECK_THAT(r.out, Catch::Contains("sluice.tar: no index beside the shards (" + http.url("t0.tar.idx") + ": HTTP 404)"));
  CHECK_THAT(r.out, Catch::Contains("remote      4 objects: 0 from the node cache, 4 downloaded (1.6 MB, 4 requests, "
                                    "0 retries, 0 evictions)"));
  CHECK_THAT(r.out, Catch::Contains("verdict     network-bound: fetching 1.6 MB of remote objects"));
  r = sh(work, "SLUICE_CACHE_DIR=cache " + cli() + " run p.lua");
  INFO(r.out);
  CHECK_THAT(r.out, Catch::Contains("remote      4 objects: 4 from the node cache, 0 downloaded (0.0 MB, 0 requests"));
  CHECK_THAT(r.out, !Catch::Contains("network-bound"));
}

TEST_CASE("Sources: tfrecord with its index, npy arrays and files over http:// read what the local files give") {
  if (cli().empty()) SKIP_TEST(kNoCli);
  if (!Nginx::why_not().empty()) SKIP_TEST(Nginx::why_not());
  const std::string data = SLUICE_SHARED_DATA;
  struct stat st{};
  if (::stat((data + "/tfrecord").c_str(), &st) != 0) SKIP_TEST("../shared/data (the real-data fixtures) is absent");
  Nginx http(data);  // read only: indexes go to index_dir
  const std::string work = temp_dir("run");
  const std::string tf = "tfrecord/tensorflow-ranking/", npy = "npy/xtensor/";
  struct Case {
    std::string name, local, remote, rest;
  };
  const std::string bytes_map =
      "  fields = { { 'len', 'int32' }, { 'first', 'uint8' } },\n"
      "  map = function(s, ctx) return { len = s.bytes.nbytes, first = s.bytes.data[0] } end,\n"
      "  batch_size = 4, shuffle = true, seed = 2, workers = 2,\n";
  const std::vector<Case> cases = {
      {"tfrecord", "sluice.tfrecord { '" + data + "/" + tf + "train_elwc.tfrecord', '" + data + "/" + tf +
                       "eval_elwc.tfrecord', index_dir = 'idx' }",
       "sluice.tfrecord { '" + http.url(tf + "train_elwc.tfrecord") + "', '" + http.url(tf + "eval_elwc.tfrecord") +
           "', index_dir = 'idx' }",
       bytes_map},
      {"npy",
       "sluice.npy { c = '" + data + "/" + npy + "double.le.npy', f = '" + data + "/" + npy +
           "double_fortran.le.npy' }",
       "sluice.npy { c = '" + http.url(npy + "double.le.npy") + "', f = '" + http.url(npy + "double_fortran.le.npy") +
           "' }",
       "  batch_size = 2, workers = 2,\n"},
      {"files",
       "sluice.files { '" + data + "/" + npy + "bool.le.npy', '" + data + "/" + npy + "bool_fortran.le.npy', '" + data +
           "/" + npy + "double.le.npy', '" + data + "/" + npy + "double_fortran.le.npy' }",
       "sluice.files { '" + http.url(npy + "{bool,bool_fortran,double,double_fortran}.le.npy") + "' }",
       bytes_map},
  };
  ::mkdir((work + "/idx").c_str(), 0755);
  for (const Case& c : cases) {
    write_file(work + "/" + c.name + "-local.lua",
               "local sluice = require('sluice')\nreturn sluice.pipeline {\n  source = " + c.local + ",\n" + c.rest + "}\n");
    write_file(work + "/" + c.name + "-http.lua",
               "local sluice = require('sluice')\nreturn sluice.pipeline {\n  source = " + c.remote + ",\n" + c.rest + "}\n");
    for (const std::string where : {"local", "http"}) {
      const Run r = sh(work, "SLUICE_CACHE_DIR=cache " + cli() + " run " + c.name + "-" + where + ".lua --quiet --record " +
                                 c.name + "-" + where + ".jsonl");
      INFO(c.name << " " << where << ": " << r.out);
      REQUIRE(r.status == 0);
    }
    const Run v = sh(work, cli() + " verify " + c.name + "-local.jsonl " + c.name + "-http.jsonl");
    INFO(c.name << ": " << v.out);
    CHECK(v.status == 0);
  }
}

namespace {

// Four tar shards PREFIX-{0..3}.tar of about 0.4 MiB each in `root`.
void make_big_shards(const std::string& root, const std::string& prefix, std::uint64_t seed) {
  for (int s = 0; s < 4; ++s) {
    const std::string members = temp_dir("members"), key = std::to_string(100 + s);
    write_file(members + "/" + key + ".txt", random_bytes(400'000, seed + s));
    write_file(members + "/" + key + ".cls", "1");
    REQUIRE(std::system(("tar -cf '" + root + "/" + prefix + "-" + std::to_string(s) + ".tar' -C '" + members +
                         "' " + key + ".txt " + key + ".cls").c_str()) == 0);
  }
}

// `pipeline` whose map takes about `ms` milliseconds a sample, for `epochs`.
std::string slow_pipeline(const std::string& source, int epochs, int ms) {
  std::string p = pipeline(source);
  p.replace(p.find("batch_size = 5"), 14, "batch_size = 2");
  p.replace(p.find("epochs = 2"), 10, "epochs = " + std::to_string(epochs));
  p.replace(p.find("  map = function(s, ctx)\n"), 25,
            "  map = function(s, ctx)\n    local t = os.clock() + " + std::to_string(ms / 1000.0) +
                "\n    while os.clock() < t do end\n");
  return p;
}

int count_cached(const std::string& dir, const std::string& suffix) {
  const Run r = sh(dir, "ls cache | grep -c -- '" + suffix + "$' || true");
  return std::atoi(r.out.c_str());
}

}  // namespace

TEST_CASE("Sources: a run's objects stay pinned for the whole run, and another run's budget cannot evict them") {
  if (cli().empty()) SKIP_TEST(kNoCli);
  if (!S3rver::why_not().empty()) SKIP_TEST(S3rver::why_not());
  const std::string shards = temp_dir("shards"), work = temp_dir("run");
  make_big_shards(shards, "A", 10);
  make_big_shards(shards, "B", 20);
  make_big_shards(shards, "C", 30);
  S3rver s3(temp_dir("s3"), "b");
  s3.upload(shards, "");
  const std::string env = "SLUICE_CACHE_DIR=cache AWS_ENDPOINT_URL=" + s3.endpoint() +
                          " AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER AWS_REGION=us-east-1 ";
  write_file(work + "/a.lua", slow_pipeline("s3://b/A-{0..3}.tar", 16, 100));  // 4 samples x 16 x 0.1 s
  write_file(work + "/b.lua", pipeline("s3://b/B-{0..3}.tar"));
  write_file(work + "/c.lua", pipeline("s3://b/C-0.tar"));
  // A runs about 6 s; B starts once A has its shards, with a 1 MiB budget,
  // and must make room: A's shards are the only other objects there. C,
  // one shard within the budget, finds the cache past it with what A and B pin.
  const Run r = sh(work, env + cli() + " run a.lua --quiet --workers 1 > a.log 2>&1 & a=$!; " +
                             "while [ $(ls cache 2>/dev/null | grep -c -- '-A-.\\.tar$') -lt 4 ]; do sleep 0.1; done; " +
                             "sleep 1; " + env + cli() + " run b.lua --cache-limit-mb 1; b=$?; " +
                             "ls cache > during.txt; " + env + cli() + " run c.lua --cache-limit-mb 1; c=$?; " +
                             "kill -0 $a && echo A-still-running; wait $a; a=$?; " +
                             "cat a.log; echo a=$a b=$b c=$c");
  INFO(r.out);
  CHECK_THAT(r.out, Catch::Contains("A-still-running"));
  CHECK_THAT(r.out, Catch::Contains("a=0 b=0 c=0"));
  CHECK_THAT(r.out, Catch::Contains("sluice.tar: the remote objects (") && Catch::Contains("pass cache_limit_mb (1 MiB)"));
  CHECK_THAT(r.out, Catch::Contains("sluice.tar: the node cache holds ") &&
                        Catch::Contains(" bytes, past cache_limit_mb (1 MiB): the rest is pinned by runs on this node "
                                        "that have not ended"));
  const std::string during = read_file(work + "/during.txt");
  INFO(during);
  for (int s = 0; s < 4; ++s) CHECK_THAT(during, Catch::Contains("-A-" + std::to_string(s) + ".tar\n"));
  // Once A has ended its pins are gone: a third run with the budget evicts A's shards.
  const Run c = sh(work, "rm -f cache/*-B-?.tar && " + env + cli() + " run b.lua --quiet --cache-limit-mb 1");
  INFO(c.out);
  CHECK(c.status == 0);
  CHECK(count_cached(work, "-A-.\\.tar") < 4);
}

TEST_CASE("Sources: an object changed in the store is seen at the next run and downloaded again") {
  if (cli().empty()) SKIP_TEST(kNoCli);
  if (!Nginx::why_not().empty()) SKIP_TEST(Nginx::why_not());
  if (!S3rver::why_not().empty()) SKIP_TEST(S3rver::why_not());
  Stores stores;
  const std::string &shards = stores.shards, &work = stores.work;
  Nginx& http = stores.http;
  S3rver& s3 = stores.s3;
  const std::string s3env = "SLUICE_CACHE_DIR=cache-s3 " + stores.s3env;
  const std::string httpenv = "SLUICE_CACHE_DIR=cache-http ";
  for (const std::string& run : {httpenv + cli() + " run http.lua", s3env + cli() + " run s3.lua"}) {
    const Run r = sh(work, run + " --quiet");
    INFO(r.out);
    REQUIRE(r.status == 0);
  }
  // train-000001.tar gets train-000002.tar's bytes (the same length): in the
  // directory nginx serves (a new mtime, so a new ETag) and in the bucket
  // (a new MD5 ETag, put by boto3).
  sleep(1);  // nginx's ETag and Last-Modified count whole seconds
  REQUIRE(std::system(("cp '" + shards + "/train-000002.tar' '" + shards + "/train-000001.tar'").c_str()) == 0);
  s3.put("train/train-000001.tar", read_file(shards + "/train-000002.tar"));
  Run r = sh(work, cli() + " run local.lua --quiet --record local.jsonl");
  REQUIRE(r.status == 0);
  for (const auto& [name, run] : std::vector<std::pair<std::string, std::string>>{
           {"http", httpenv + cli() + " run http.lua --record http.jsonl"},
           {"s3", s3env + cli() + " run s3.lua --record s3.jsonl"}}) {
    r = sh(work, run);
    INFO(name << ": " << r.out);
    REQUIRE(r.status == 0);
    CHECK_THAT(r.out, Catch::Contains("remote      4 objects: 3 from the node cache, 1 downloaded"));
    CHECK_THAT(r.out, Catch::Contains("4 revalidated (1 changed)"));
    r = sh(work, cli() + " verify local.jsonl " + name + ".jsonl");
    INFO(name << ": " << r.out);
    CHECK(r.status == 0);
  }
  CHECK(http.requests("GET", "/train-000001.tar") == 2);
  CHECK(http.requests("GET", "/train-000000.tar") == 1);
  CHECK(http.requests("HEAD", "/train-000000.tar") == 1);  // its revalidation; the cold fetch was one GET
}

TEST_CASE("Sources: sluice.mix parts and sluice.tokens files over http:// read what the local files give") {
  if (cli().empty()) SKIP_TEST(kNoCli);
  if (!Nginx::why_not().empty()) SKIP_TEST(Nginx::why_not());
  const std::string root = temp_dir("www"), work = temp_dir("run");
  // Two flat uint16 token files: documents of 1 to 40 tokens in [1, 500), each ending in EOS = 0.
  for (const std::string name : {"a", "b"}) {
    const std::string bytes = random_bytes(name == "a" ? 6000 : 2000, name == "a" ? 7 : 8);
    std::string tokens;
    for (std::size_t i = 0; i + 1 < bytes.size(); i += 2) {
      std::uint16_t t = static_cast<std::uint16_t>(1 + (static_cast<unsigned char>(bytes[i]) * 256u +
                                                        static_cast<unsigned char>(bytes[i + 1])) % 499);
      if (static_cast<unsigned char>(bytes[i]) % 20 == 0) t = 0;
      tokens.push_back(static_cast<char>(t & 0xff));
      tokens.push_back(static_cast<char>(t >> 8));
    }
    write_file(root + "/" + name + ".bin", tokens);
  }
  Nginx http(root);
  auto mix = [](const std::string& a, const std::string& b) {
    return "local sluice = require('sluice')\n"
           "return sluice.pipeline {\n"
           "  source = sluice.mix{ { sluice.tokens{ '" + a + "', dtype = 'uint16', eos = 0 }, weight = 0.7 },\n"
           "                       { sluice.tokens{ '" + b + "', dtype = 'uint16', eos = 0 }, weight = 0.3 } },\n"
           "  pack = { seq_len = 16 }, batch_size = 4, shuffle = true, seed = 5, epochs = 2,\n"
           "}\n";
  };
  auto tokens = [](const std::string& a) {
    return "local sluice = require('sluice')\n"
           "return sluice.pipeline {\n"
           "  source = sluice.tokens{ '" + a + "', dtype = 'uint16', eos = 0 },\n"
           "  pack = { seq_len = 16 }, batch_size = 4, shuffle = true, seed = 5, epochs = 1,\n"
           "}\n";
  };
  write_file(work + "/mix_local.lua", mix(root + "/a.bin", root + "/b.bin"));
  write_file(work + "/mix_http.lua", mix(http.url("a.bin"), http.url("b.bin")));
  write_file(work + "/tokens_local.lua", tokens(root + "/a.bin"));
  write_file(work + "/tokens_http.lua", tokens(http.url("a.bin")));
  for (const std::string name : {"mix", "tokens"}) {
    Run r = sh(work, cli() + " run " + name + "_local.lua --quiet --record " + name + "_local.jsonl");
    INFO(r.out);
    REQUIRE(r.status == 0);
    r = sh(work, "SLUICE_CACHE_DIR=cache " + cli() + " run " + name + "_http.lua --record " + name + "_http.jsonl");
    INFO(r.out);
    REQUIRE(r.status == 0);
    CHECK_THAT(r.out, Catch::Contains("remote      "));
    r = sh(work, cli() + " verify " + name + "_local.jsonl " + name + "_http.jsonl");
    INFO(name << ": " << r.out);
    CHECK(r.status == 0);
  }
  CHECK(http.requests("GET", "/a.bin") == 1);  // the tokens run found it in the cache
  CHECK(http.requests("GET", "/b.bin") == 1);
}

TEST_CASE("Sources: JSON lines over http:// tokenized at load read as the local text, and their downloads are counted") {
  if (cli().empty()) SKIP_TEST(kNoCli);
  if (!Nginx::why_not().empty()) SKIP_TEST(Nginx::why_not());
  if (std::system("command -v spm_train > /dev/null 2>&1") != 0) SKIP_TEST("spm_train not found (Debian package sentencepiece)");
  const std::string root = temp_dir("www"), work = temp_dir("run");
  const std::string train = "spm_train --input=/usr/share/common-licenses/Apache-2.0 --model_prefix=" + work +
                            "/m --vocab_size=300 --model_type=unigram --minloglevel=2 > /dev/null 2>&1";
  REQUIRE(std::system(train.c_str()) == 0);
  std::string lines;
  for (int i = 0; i < 200; ++i)
    lines += "{\"text\": \"document " + std::to_string(i) + " is licensed under the Apache License\"}\n";
  write_file(root + "/docs.jsonl", lines);
  Nginx http(root);
  auto pipeline = [](const std::string& file) {
    return "local sluice = require('sluice')\n"
           "return sluice.pipeline {\n"
           "  source = sluice.tokens{ text = sluice.jsonl{ '" + file + "' }, tokenizer = sluice.sentencepiece('m.model') },\n"
           "  pack = { seq_len = 16 }, batch_size = 4, shuffle = true, seed = 5,\n"
           "}\n";
  };
  write_file(work + "/local.lua", pipeline(root + "/docs.jsonl"));
  write_file(work + "/http.lua", pipeline(http.url("docs.jsonl")));
  Run r = sh(work, "SLUICE_CACHE_DIR=cache " + cli() + " run local.lua --quiet --record local.jsonl");
  INFO(r.out);
  if (r.status != 0 && r.out.find("SentencePiece") != std::string::npos) SKIP_TEST("the sluice command is built without SentencePiece");
  REQUIRE(r.status == 0);
  r = sh(work, "SLUICE_CACHE_DIR=cache " + cli() + " run http.lua --record http.jsonl");
  INFO(r.out);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.out, Catch::Contains("remote      1 objects: 0 from the node cache, 1 downloaded"));
  CHECK(http.requests("GET", "/docs.jsonl") == 1);
  r = sh(work, cli() + " verify local.jsonl http.jsonl");
  INFO(r.out);
  CHECK(r.status == 0);
}

TEST_CASE("Sources: a Megatron-LM .bin/.idx pair over s3:// and http:// reads as the local pair does") {
  if (cli().empty()) SKIP_TEST(kNoCli);
  if (!Nginx::why_not().empty()) SKIP_TEST(Nginx::why_not());
  if (!S3rver::why_not().empty()) SKIP_TEST(S3rver::why_not());
  // Documents of 3 to 9 uint16 tokens without an EOS: only the index tells
  // where one ends (read as a flat file, the .bin is one document).
  const std::string root = temp_dir("megatron"), work = temp_dir("run");
  std::string bin, sizes, pointers, documents;
  auto put = [](std::string& to, auto value) { to.append(reinterpret_cast<const char*>(&value), sizeof value); };
  const int kDocs = 40;
  std::int64_t at = 0;
  for (int d = 0; d < kDocs; ++d) {
    const int n = 3 + d % 7;
    for (int i = 0; i < n; ++i) put(bin, static_cast<std::uint16_t>(1 + (d * 31 + i * 7) % 900));
    put(sizes, static_cast<std::int32_t>(n));
    put(pointers, at);
    at += 2 * n;
  }
  for (int d = 0; d <= kDocs; ++d) put(documents, static_cast<std::int64_t>(d));
  std::string idx("MMIDIDX\0\0", 9);
  put(idx, std::uint64_t{1});
  put(idx, std::uint8_t{8});  // uint16
  put(idx, static_cast<std::uint64_t>(kDocs));
  put(idx, static_cast<std::uint64_t>(kDocs + 1));
  write_file(root + "/corpus.bin", bin);
  write_file(root + "/corpus.idx", idx + sizes + pointers + documents);
  Nginx http(root);
  S3rver s3(temp_dir("s3"), "bkt");
  s3.upload(root, "tok/");
  auto pipeline = [](const std::string& path) {
    return "local sluice = require('sluice')\n"
           "return sluice.pipeline {\n"
           "  source = sluice.tokens{ '" + path + "', dtype = 'uint16' },\n"
           "  pack = { seq_len = 12, mode = 'best_fit' }, batch_size = 4, shuffle = true, seed = 3,\n"
           "}\n";
  };
  write_file(work + "/local.lua", pipeline(root + "/corpus"));
  Run r = sh(work, cli() + " run local.lua --record local.jsonl");
  INFO(r.out);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.out, Catch::Contains("pack: 40 documents"));
  const std::vector<std::string> remote = {"s3://bkt/tok/corpus.bin", "s3://bkt/tok/corpus.idx", "s3://bkt/tok/corpus",
                                           http.url("corpus.bin")};
  for (std::size_t k = 0; k < remote.size(); ++k) {
    INFO(remote[k]);
    const std::string name = "remote" + std::to_string(k);
    write_file(work + "/" + name + ".lua", pipeline(remote[k]));
    // The cache's directory as a setting, over SLUICE_CACHE_DIR.
    r = sh(work, s3_env(s3) + " SLUICE_CACHE_DIR=elsewhere " + cli() + " run " + name + ".lua --cache-dir cache" +
                     std::to_string(k) + " --record " + name + ".jsonl");
    INFO(r.out);
    REQUIRE(r.status == 0);
    CHECK_THAT(r.out, Catch::Contains("pack: 40 documents"));
    struct stat st{};
    CHECK(::stat((work + "/cache" + std::to_string(k)).c_str(), &st) == 0);
    CHECK(::stat((work + "/elsewhere").c_str(), &st) != 0);
    r = sh(work, cli() + " verify local.jsonl " + name + ".jsonl");
    INFO(r.out);
    CHECK(r.status == 0);
  }
}

TEST_CASE("Sources: an error inside a remote object names its URL, never the node cache's copy") {
  if (cli().empty()) SKIP_TEST(kNoCli);
  if (!S3rver::why_not().empty()) SKIP_TEST(S3rver::why_not());
  const std::string root = temp_dir("bad"), work = temp_dir("run");
  write_file(root + "/broken.jsonl", "{\"text\": \"ok\"}\n{\"text\": \"broken\n{\"text\": \"ok\"}\n");
  write_file(root + "/bad.parquet", "this is not parquet at all");
  write_file(root + "/odd.bin", "abc");
  write_file(root + "/good.jsonl", "{\"text\": \"fine\"}\n{\"text\": \"also\"}\n");
  S3rver s3(temp_dir("s3"), "bkt");
  s3.upload(root, "bad/");
  write_file(work + "/jsonl.lua",
             "local sluice = require('sluice')\nreturn sluice.pipeline { source = sluice.jsonl{ "
             "'s3://bkt/bad/broken.jsonl' }, batch_size = 1, fields = { { 't', 'bytes', 16 } }, "
             "map = function(s) return { t = s.bytes } end }\n");
  write_file(work + "/parquet.lua", "local sluice = require('sluice')\nreturn sluice.pipeline { source = "
                                    "sluice.parquet{ 's3://bkt/bad/bad.parquet' }, batch_size = 1 }\n");
  write_file(work + "/tokens.lua", "local sluice = require('sluice')\nreturn sluice.pipeline { source = "
                                   "sluice.tokens{ 's3://bkt/bad/odd.bin', dtype = 'uint16' }, pack = { seq_len = 4 }, "
                                   "batch_size = 1 }\n");
  // name, what the error says, the cache copy's name (HASH-NAME), which it must not say
  const std::vector<std::array<std::string, 3>> cases = {
      {"jsonl", "s3://bkt/bad/broken.jsonl: line 2: column 17: the line ends inside a string", "-broken.jsonl"},
      {"parquet", "s3://bkt/bad/bad.parquet: not a Parquet file", "-bad.parquet"},
      {"tokens", "s3://bkt/bad/odd.bin: 3 bytes is not a whole number of uint16 tokens", "-odd.bin"}};
  for (const auto& [name, said, copy] : cases) {
    const Run r = sh(work, s3_env(s3) + " SLUICE_CACHE_DIR=cache " + cli() + " run " + name + ".lua");
    INFO(r.out);
    CHECK(r.status != 0);
    CHECK_THAT(r.out, Catch::Contains(said));
    CHECK_THAT(r.out, !Catch::Contains(copy));
  }
  Run r = sh(work, cli() + " inspect s3://bkt/bad/bad.parquet");
  CHECK(r.status != 0);
  CHECK_THAT(r.out, Catch::Contains("s3://bkt/bad/bad.parquet: a URL; inspect reads local files"));
  r = sh(work, cli() + " verify s3://bkt/bad/");
  CHECK(r.status == 2);
  CHECK_THAT(r.out, Catch::Contains("s3://bkt/bad/: a URL; verify reads local files") && !Catch::Contains("usage"));
  // sluice peek lists each sample's file by its URL too.
  write_file(work + "/good.lua",
             "local sluice = require('sluice')\nreturn sluice.pipeline { source = sluice.jsonl{ "
             "'s3://bkt/bad/good.jsonl' }, batch_size = 2, fields = { { 't', 'bytes', 8 } }, "
             "map = function(s) return { t = s.bytes } end }\n");
  r = sh(work, s3_env(s3) + " SLUICE_CACHE_DIR=cache " + cli() + " peek good.lua");
  INFO(r.out);
  CHECK(r.status == 0);
  CHECK_THAT(r.out, Catch::Contains("s3://bkt/bad/good.jsonl"));
  CHECK_THAT(r.out, !Catch::Contains("-good.jsonl"));
}

TEST_CASE("Sources: a run slowed by checking its cached objects with the store says so, not that it downloaded") {
  if (cli().empty()) SKIP_TEST(kNoCli);
  if (!Nginx::why_not().empty()) SKIP_TEST(Nginx::why_not());
  const std::string root = temp_dir("www"), work = temp_dir("run");
  write_file(root + "/a.jsonl", "{\"text\": \"one\"}\n{\"text\": \"two\"}\n");
  Nginx http(root);
  // The first run's two requests (the folder's manifest, absent; the GET)
  // pass; in the second, the manifest passes and the cached copy's check
  // meets four 503s, retried after backoffs of 0.75 s or more in all.
  FaultProxy proxy(http.port(), {Fault::pass, Fault::pass, Fault::pass, Fault::status_503, Fault::status_503,
                                 Fault::status_503, Fault::status_503});
  write_file(work + "/p.lua", "local sluice = require('sluice')\nreturn sluice.pipeline { source = sluice.jsonl{ '" +
                                  proxy.url("a.jsonl") + "' }, batch_size = 1, fields = { { 't', 'bytes', 8 } }, "
                                  "map = function(s) return { t = s.bytes } end }\n");
  Run r = sh(work, "SLUICE_CACHE_DIR=cache " + cli() + " run p.lua");
  INFO(r.out);
  REQUIRE(r.status == 0);
  REQUIRE(proxy.requests() == 2);
  r = sh(work, "SLUICE_CACHE_DIR=cache " + cli() + " run p.lua");
  INFO(r.out);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.out, Catch::Contains("verdict     network-bound: checking 1 cached object with the store"));
  CHECK_THAT(r.out, Catch::Contains("nothing was downloaded"));
  CHECK_THAT(r.out, !Catch::Contains("the next run reads them from the warm cache"));
}

TEST_CASE("Sources: https:// and s3:// over TLS: an untrusted certificate is one clear error, with its CA the same records") {
  if (cli().empty()) SKIP_TEST(kNoCli);
  if (!Nginx::why_not().empty()) SKIP_TEST(Nginx::why_not());
  if (!S3rver::why_not().empty()) SKIP_TEST(S3rver::why_not());
  if (!tls_why_not().empty()) SKIP_TEST(tls_why_not());
  // Two stores, each with a CA of its own: the s3:// runs can only pass by
  // AWS_CA_BUNDLE, the https:// ones only by CURL_CA_BUNDLE or SSL_CERT_FILE.
  const std::string shards = make_shards(), work = temp_dir("run");
  Nginx https(shards, "", true);
  S3rver s3(temp_dir("s3"), "bkt", true);
  s3.upload(shards, "train/");
  write_file(work + "/local.lua", pipeline(shards + "/train-*.tar"));
  write_file(work + "/http.lua", pipeline(https.url("train-{000000..000003}.tar")));
  write_file(work + "/s3.lua", pipeline("s3://bkt/train/*.tar"));
  const std::string s3env = s3_env(s3);
  REQUIRE_THAT(s3env, Catch::Contains("AWS_ENDPOINT_URL=https://127.0.0.1:"));

  // Neither CA trusted (the system's store has neither): one clear error
  // each, naming the URL and what to set, at once (a certificate is not
  // retried), and no HTTP request reached the server.
  Run r = sh(work, "SLUICE_CACHE_DIR=c0 " + cli() + " run http.lua --quiet");
  INFO(r.out);
  CHECK(r.status != 0);
  CHECK_THAT(r.out, Catch::Contains(https.url("train-000000.tar")) || Catch::Contains(https.url("manifest.json")));
  CHECK_THAT(r.out, Catch::Contains("certificate"));
  CHECK_THAT(r.out, Catch::Contains("CURL_CA_BUNDLE or SSL_CERT_FILE"));
  CHECK_THAT(r.out, !Catch::Contains("gave up after"));
  CHECK(https.log().empty());
  r = sh(work, s3env + "SLUICE_CACHE_DIR=c0 CURL_CA_BUNDLE=" + https.ca_file() + " " + cli() + " run s3.lua --quiet");
  INFO(r.out);
  CHECK(r.status != 0);
  CHECK_THAT(r.out, Catch::Contains("s3://bkt/train/"));
  CHECK_THAT(r.out, Catch::Contains("certificate"));
  CHECK_THAT(r.out, Catch::Contains("AWS_CA_BUNDLE"));
  r = sh(work, "SLUICE_CACHE_DIR=c0 CURL_CA_BUNDLE=/nonexistent/ca.pem " + cli() + " run http.lua --quiet");
  INFO(r.out);
  CHECK(r.status != 0);
  CHECK_THAT(r.out, Catch::Contains("/nonexistent/ca.pem"));
  CHECK_THAT(r.out, Catch::Contains("CURL_CA_BUNDLE or SSL_CERT_FILE)"));

  // Each CA given where it belongs: the records of local files, with 1 and 2 workers.
  const char* saved = std::getenv("CURL_CA_BUNDLE");
  ::setenv("CURL_CA_BUNDLE", https.ca_file().c_str(), 1);
  check_same_records(work, s3env + "AWS_CA_BUNDLE=" + s3.ca_file() + " ");
  ::unsetenv("CURL_CA_BUNDLE");
  r = sh(work, "SLUICE_CACHE_DIR=c1 SSL_CERT_FILE=" + https.ca_file() + " " + cli() +
                   " run http.lua --quiet --record ssl_cert_file.jsonl");
  INFO(r.out);
  CHECK(r.status == 0);
  CHECK(sh(work, cli() + " verify local.jsonl ssl_cert_file.jsonl").status == 0);
  if (saved) ::setenv("CURL_CA_BUNDLE", saved, 1);
}
