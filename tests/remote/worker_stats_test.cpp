// What the workers' downloads cost, as Script::remote_stats() counts it
// (what `stats()["remote"]` and `sluice run`'s summary show), also when a
// download fails: a store stopped mid-run makes the worker that needs the
// next shard retry and give up, and those requests and retries are counted
// like any others. Over nginx on 127.0.0.1, through load_script and a Loader.
#include <catch2/catch.hpp>

#include <fstream>
#include <string>

#include "servers.h"
#include "skip.h"
#include "sluice/error.h"
#include "sluice/io/tar_index.h"
#include "sluice/io/tar_writer.h"
#include "sluice/loader.h"
#include "sluice/script.h"

using namespace sluice::test;

TEST_CASE("Worker stats: the requests and retries of a download that fails in a worker are counted") {
  if (!Nginx::why_not().empty()) SKIP_TEST(Nginx::why_not());
  constexpr int kShards = 4, kPerShard = 8;
  const std::string shards = temp_dir("shards"), work = temp_dir("run");
  for (int s = 0; s < kShards; ++s) {  // each with its index beside it: the workers fetch the shards
    const std::string path = shards + "/s-" + std::to_string(s) + ".tar";
    sluice::io::TarWriter tar(path);
    for (int i = 0; i < kPerShard; ++i) {
      const std::string record = random_bytes(1000, s * 100 + i);
      tar.add(std::to_string(s * kPerShard + i) + ".bin", std::as_bytes(std::span(record.data(), record.size())));
      tar.end_sample();
    }
    tar.finish();
    sluice::io::write_tar_index(path + ".idx", sluice::io::scan_tar(path));
  }
  Nginx http(shards);
  std::ofstream(work + "/p.lua") << "local sluice = require('sluice')\n"
                                    "return sluice.pipeline {\n"
                                    "  source = sluice.tar { '" + http.url("s-{0..3}.tar") + "' },\n"
                                    "  fields = { { 'len', 'int32' } },\n"
                                    "  map = function(s, ctx) return { len = s.fields.bin.nbytes } end,\n"
                                    "  batch_size = 4, workers = 1,\n"
                                    "}\n";
  sluice::Script script = sluice::load_script({.path = work + "/p.lua", .cache_dir = work + "/cache",
                                               .remote_retries = 2, .remote_timeout_ms = 2000,
                                               .remote_prefetch_mb = 0});
  const std::uint64_t at_load = script.remote_stats().requests;  // the indexes
  sluice::Loader loader(script.options);
  REQUIRE(loader.next());  // shard 0 in the cache
  http.stop();
  std::string error;
  try {
    while (loader.next()) {
    }
  } catch (const sluice::Error& e) {
    error = e.what();
  }
  INFO(error);
  REQUIRE_THAT(error, Catch::Contains("(gave up after 2 retries)"));
  const sluice::ScriptRemoteStats r = script.remote_stats();
  // At least the GET of the shard the failed batch needed and its 2 retries
  // (shard 0 may have come with the load's trial of sample 0).
  CHECK(r.retries >= 2);
  CHECK(r.requests - at_load >= 3);
}
