// The C API over remote shards: sluice_loader_open_script on a pipeline.lua
// whose tar shards are http:// URLs (nginx on 127.0.0.1) delivers the batches
// the local shards give; a missing shard is one error naming it.
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "servers.h"
#include "skip.h"
#include "sluice/sluice.h"

using namespace sluice::test;

namespace {

std::string script_over(const std::string& source) {
  return "local sluice = require('sluice')\n"
         "return sluice.pipeline {\n"
         "  source = sluice.tar { '" + source + "' },\n"
         "  fields = { { 'len', 'int32' } },\n"
         "  map = function(s, ctx) return { len = s.fields.txt.nbytes } end,\n"
         "  batch_size = 3, shuffle = true, seed = 9, workers = 2,\n"
         "}\n";
}

// Every batch's sample ids, or the error text.
std::vector<std::vector<std::uint64_t>> read_all(const std::string& path, std::string* error) {
  const char* overrides[] = {"remote_retries=1", "remote_timeout_ms=5000", nullptr};
  sluice_loader* loader = nullptr;
  std::vector<std::vector<std::uint64_t>> out;
  if (sluice_loader_open_script(path.c_str(), overrides, &loader) != SLUICE_OK) {
    *error = sluice_last_error();
    return out;
  }
  sluice_batch* batch = nullptr;
  while (sluice_loader_next(loader, &batch) == SLUICE_OK) {
    const std::uint64_t* ids = sluice_batch_sample_ids(batch);
    out.emplace_back(ids, ids + sluice_batch_size(batch));
    sluice_batch_release(batch);
  }
  sluice_loader_destroy(loader);
  return out;
}

}  // namespace

TEST_CASE("C API: a pipeline over http:// shards reads what the local shards give") {
  if (!Nginx::why_not().empty()) SKIP_TEST(Nginx::why_not());
  const std::string root = temp_dir("www"), work = temp_dir("capi");
  for (int s = 0; s < 3; ++s) {
    const std::string members = temp_dir("members");
    std::string names;
    for (int i = 0; i < 4; ++i) {
      const std::string key = std::to_string(10 + s * 4 + i);
      write_file(members + "/" + key + ".txt", random_bytes(5 + i, i));
      names += " " + key + ".txt";
    }
    REQUIRE(std::system(("tar -cf '" + root + "/s" + std::to_string(s) + ".tar' -C '" + members + "'" + names).c_str()) ==
            0);
  }
  Nginx http(root);
  write_file(work + "/local.lua", script_over(root + "/s*.tar"));
  write_file(work + "/http.lua", script_over(http.url("s{0..2}.tar")));
  write_file(work + "/missing.lua", script_over(http.url("gone.tar")));
  ::setenv("SLUICE_CACHE_DIR", (work + "/cache").c_str(), 1);
  std::string error;
  const auto local = read_all(work + "/local.lua", &error);
  REQUIRE(error.empty());
  const auto remote = read_all(work + "/http.lua", &error);
  INFO(error);
  REQUIRE(error.empty());
  CHECK(local.size() == 4);
  CHECK(remote == local);
  read_all(work + "/missing.lua", &error);
  CHECK_THAT(error, Catch::Contains(http.url("gone.tar") + ": HTTP 404"));
  ::unsetenv("SLUICE_CACHE_DIR");
}
