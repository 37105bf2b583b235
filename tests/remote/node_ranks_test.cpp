// Several ranks of one node sharing one node cache with a budget, as a
// synchronised training job runs them: four Loaders (ranks 0-3 of 4, two
// workers each) in one process, one batch from each in turn, as every step's
// collective keeps ranks in step. With the locality shuffle and a budget of
// two windows, each shard is downloaded once in the epoch (nginx's access
// log), however far ahead each worker may fetch (remote_prefetch_mb).
#include <catch2/catch.hpp>

#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "servers.h"
#include "skip.h"
#include "sluice/io/tfrecord.h"
#include "sluice/io/tfrecord_writer.h"
#include "sluice/loader.h"
#include "sluice/script.h"

using namespace sluice::test;

TEST_CASE("Node cache: four ranks in step, with a cache of two windows, download each shard once an epoch") {
  if (!Nginx::why_not().empty()) SKIP_TEST(Nginx::why_not());
  // 24 shards of 40 to 110 records of ~12 KB (0.5-1.3 MB each, 22 MB in
  // all), windows of 3 shards (~230 samples): a cache of 9 MB holds two
  // windows of the largest, and the positions in flight (6 batch slots of 4
  // samples on each of 4 ranks: 96) span less than a window, as the bound
  // asks (guarantees.md). 1848 records: 462 a rank, no padding (which would
  // read the first window's shards again at the epoch's end).
  constexpr int kShards = 24;
  const std::string shards = temp_dir("shards"), work = temp_dir("run");
  std::map<std::string, std::uint64_t> sizes;  // uri -> bytes
  std::uint64_t records = 0;
  for (int s = 0; s < kShards; ++s) {
    const std::string name = "train-" + std::to_string(s) + ".tfrecord", path = shards + "/" + name;
    {
      sluice::io::TFRecordWriter writer(path);
      for (int i = 0; i < 40 + (s * 7) % 15 * 5 + (s == 0 ? 3 : 0); ++i, ++records) {
        const std::string record = random_bytes(12'000, s * 1000 + i);
        writer.write(std::as_bytes(std::span(record.data(), record.size())));
      }
    }
    sluice::io::write_tfrecord_index(path + ".idx", sluice::io::scan_tfrecord(path));
    sizes["/" + name] = static_cast<std::uint64_t>(std::filesystem::file_size(path));
  }
  Nginx http(shards);
  write_file(work + "/p.lua", "local sluice = require('sluice')\n"
                              "return sluice.pipeline {\n"
                              "  source = sluice.tfrecord { '" + http.url("train-{0..23}.tfrecord") + "' },\n"
                              "  fields = { { 'len', 'int32' } },\n"
                              "  map = function(s, ctx) return { len = s.fields.data.nbytes } end,\n"
                              "  batch_size = 4, workers = 2, epochs = 1, shuffle = true, shuffle_window = 3, seed = 3,\n"
                              "}\n");
  // Each worker may fetch ahead by the default remote_prefetch_mb (256), far
  // past the budget: the ranks' workers make room out of what each will not
  // read again, which another may still read.
  std::vector<std::unique_ptr<sluice::Loader>> ranks;
  for (std::uint32_t r = 0; r < 4; ++r) {
    sluice::Script script = sluice::load_script({.path = work + "/p.lua", .cache_dir = work + "/cache",
                                                 .cache_limit_mb = 9});
    script.options.rank = r;
    script.options.world_size = 4;
    ranks.push_back(std::make_unique<sluice::Loader>(script.options));
  }
  std::multiset<std::uint64_t> seen;
  for (bool more = true; more;) {
    more = false;
    for (auto& loader : ranks) {
      auto batch = loader->next();
      if (!batch) continue;
      more = true;
      for (const std::uint64_t id : batch->sample_ids()) seen.insert(id);
    }
  }
  REQUIRE(records == 1848);
  CHECK(seen.size() == records);
  CHECK(std::set<std::uint64_t>(seen.begin(), seen.end()).size() == records);
  ranks.clear();
  std::map<std::string, int> whole;  // uri -> GETs that sent the whole object
  std::uint64_t sent = 0, data = 0;
  for (const auto& [uri, size] : sizes) data += size;
  for (const std::string& line : http.log()) {
    std::istringstream in(line);
    std::string method, uri, status;
    std::uint64_t bytes = 0;
    in >> method >> uri >> status >> bytes;
    if (method != "GET" || !sizes.count(uri)) continue;
    sent += bytes;
    if (bytes == sizes[uri]) ++whole[uri];
  }
  // Once each (each rank's load reads sample 0's bytes alone, a range). Run
  // with every core kept busy, this caught three interleavings that sent a
  // shard twice: a worker evicting, to fetch ahead, a shard past the end of
  // its own list that another had fetched for the next window; a download
  // ahead whose reservation was judged again at the store's answer and
  // refused after the body was sent; and one left unreserved by a lock
  // busy for an instant, downloaded anyway.
  for (const auto& [uri, size] : sizes) {
    INFO(uri);
    CHECK(whole[uri] == 1);
  }
  CHECK(sent <= data + data / 10);
}
