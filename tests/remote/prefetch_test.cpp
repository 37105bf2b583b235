// Remote TFRecord and tar shards whose indexes are published beside them,
// fetched by the workers as the plan needs them (record_feed.h,
// remote/prefetcher.h), end to end through the `sluice` command line:
// identical run records over local files, http:// (nginx) and s3:// (s3rver)
// with 1 and 2 workers; the first batch before the last shard; a
// cache_limit_mb below the data set held while the run goes (the directory
// sampled from here); a store stopped mid-run ends the run with the URL's
// error and a state that a rerun resumes from, reusing the cache; two ranks
// download each shard once; a tar's corrupt index is an error naming it, a
// missing one a note and the whole download.
#include <catch2/catch.hpp>

#include <dirent.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <span>
#include <sstream>
#include <thread>

#include "servers.h"
#include "skip.h"
#include "sluice/io/tar_index.h"
#include "sluice/io/tar_writer.h"
#include "sluice/io/tfrecord.h"
#include "sluice/io/tfrecord_writer.h"

using namespace sluice::test;

namespace {

constexpr int kShards = 8, kPerShard = 12;

// The shard format under test: its file extension (and source name), and
// the field a record's bytes reach map in.
struct Format {
  std::string ext, field;
};
const Format kTFRecord{"tfrecord", "data"}, kTar{"tar", "bin"};

std::string shard_name(int s, const Format& f = kTFRecord) { return "train-" + std::to_string(s) + "." + f.ext; }

// kShards shards of kPerShard records ("rKKKK" then random bytes, about
// `bytes` each), each with its index beside it (NAME.idx): TFRecords, or
// tars with the record as the member KEY.bin.
std::string make_shards(std::size_t bytes, const Format& f = kTFRecord) {
  const std::string dir = temp_dir("shards");
  for (int s = 0; s < kShards; ++s) {
    const std::string path = dir + "/" + shard_name(s, f);
    std::unique_ptr<sluice::io::TFRecordWriter> tfrecord;
    std::unique_ptr<sluice::io::TarWriter> tar;
    if (f.ext == "tar") tar = std::make_unique<sluice::io::TarWriter>(path);
    else tfrecord = std::make_unique<sluice::io::TFRecordWriter>(path);
    for (int i = 0; i < kPerShard; ++i) {
      const std::string record = "r" + std::to_string(1000 + s * kPerShard + i) + random_bytes(bytes + i, s * 100 + i);
      const auto bytes_of = std::as_bytes(std::span(record.data(), record.size()));
      if (tar) {
        tar->add(std::to_string(s * kPerShard + i) + ".bin", bytes_of);
        tar->end_sample();
      } else {
        tfrecord->write(bytes_of);
      }
    }
    if (tar) {
      tar->finish();
      sluice::io::write_tar_index(path + ".idx", sluice::io::scan_tar(path));
    } else {
      tfrecord->close();
      sluice::io::write_tfrecord_index(path + ".idx", sluice::io::scan_tfrecord(path));
    }
  }
  return dir;
}

// `extra`: more pipeline options; `first_counts`: a file where each process
// appends, at its first sample, how many shards the cache `cache` holds whole.
std::string pipeline(const std::string& source, const std::string& extra, const std::string& cache = "",
                     const Format& f = kTFRecord) {
  std::string count;
  if (!cache.empty())
    count = "    if not counted then\n"
            "      counted = true\n"
            "      local f = io.popen(\"ls '" + cache + "' | grep -c '\\\\." + f.ext + "$'\")\n"
            "      local n = f:read('*n')\n"
            "      f:close()\n"
            "      local out = io.open('first-counts.txt', 'a')\n"
            "      out:write(n, '\\n')\n"
            "      out:close()\n"
            "    end\n";
  return "local sluice = require('sluice')\n"
         "local ffi = require('ffi')\n"
         "local counted = false\n"
         "return sluice.pipeline {\n"
         "  source = sluice." + f.ext + " { '" + source + "' },\n"
         "  fields = { { 'key', 'int32' }, { 'len', 'int32' }, { 'last', 'uint8' } },\n"
         "  map = function(s, ctx)\n" + count +
         "    local b = s.fields." + f.field + "\n"
         "    return { key = tonumber(ffi.string(b.data + 1, 4)), len = b.nbytes, last = b.data[b.nbytes - 1] }\n"
         "  end,\n" + extra + "}\n";
}

std::string http_glob(const Nginx& http, const Format& f = kTFRecord) {
  return http.url("train-{0.." + std::to_string(kShards - 1) + "}." + f.ext);
}

// Whole-shard GETs (the workers' downloads); the load's trial reads its
// sample with a ranged one (206).
int gets(const Nginx& http, int s, const Format& f = kTFRecord) { return http.requests("GET", "/" + shard_name(s, f), 200); }
int ranged(const Nginx& http, int s, const Format& f = kTFRecord) {
  return http.requests("GET", "/" + shard_name(s, f), 206);
}

// Bytes of whole and partial objects in a cache directory (what its budget counts).
std::uint64_t cache_bytes(const std::string& dir) {
  std::uint64_t total = 0;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return 0;
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    auto ends = [&](const std::string& s) { return name.size() >= s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0; };
    if (name[0] == '.' || ends(".lock") || ends(".meta") || ends(".idx") || ends(".tmp")) continue;
    struct stat st{};
    if (::stat((dir + "/" + name).c_str(), &st) == 0) total += static_cast<std::uint64_t>(st.st_size);
  }
  ::closedir(d);
  return total;
}

void same_records(const Format& f) {
  if (cli().empty()) SKIP_TEST(kNoCli);
  if (!Nginx::why_not().empty()) SKIP_TEST(Nginx::why_not());
  if (!S3rver::why_not().empty()) SKIP_TEST(S3rver::why_not());
  const std::string shards = make_shards(2000, f), work = temp_dir("run");
  Nginx http(shards);
  S3rver s3(temp_dir("s3"), "bkt");
  s3.upload(shards, "train/");
  const std::string extra = "  batch_size = 5, shuffle = true, seed = 11, epochs = 2,\n";
  write_file(work + "/local.lua", pipeline(shards + "/train-*." + f.ext, extra, "", f));
  write_file(work + "/http.lua", pipeline(http_glob(http, f), extra, "", f));
  write_file(work + "/s3.lua", pipeline("s3://bkt/train/*." + f.ext, extra, "", f));

  check_same_records(work, s3_env(s3), "the workers fetch the others as the plan needs them");
  // Each shard fetched once per cold cache (two caches), by whichever
  // process asked first; each index once per run.
  for (int s = 0; s < kShards; ++s) {
    CHECK(gets(http, s, f) == 2);
    CHECK(http.requests("GET", "/" + shard_name(s, f) + ".idx") == 2);
  }
}

void first_batch_early(const Format& f) {
  if (cli().empty()) SKIP_TEST(kNoCli);
  if (!Nginx::why_not().empty()) SKIP_TEST(Nginx::why_not());
  const std::string shards = make_shards(20'000, f), work = temp_dir("run");
  Nginx http(shards, "2m");  // about 0.12 s a shard
  write_file(work + "/http.lua",
             pipeline(http_glob(http, f), "  batch_size = 4, workers = 1, epochs = 1,\n", work + "/cache", f));
  const Run r = sh(work, "SLUICE_CACHE_DIR=cache " + cli() + " run http.lua --trace trace.json");
  INFO(r.out);
  REQUIRE(r.status == 0);
  // The summary and the trace count the workers' downloads with the load's
  // (the indexes), and the requests the trial's ranged reads (its child's,
  // then the launcher's).
  CHECK_THAT(r.out, Catch::Contains("remote      16 objects: 0 from the node cache, 16 downloaded"));
  CHECK_THAT(r.out, Catch::Contains(" 18 requests,"));
  CHECK(ranged(http, 0, f) == 2);
  CHECK_THAT(r.out, !Catch::Contains("cache_limit_mb"));  // none was set
  const std::string trace = read_file(work + "/trace.json");
  int spans = 0;
  for (std::size_t at = 0; (at = trace.find("\"name\":\"download\"", at)) != std::string::npos; ++at) ++spans;
  CHECK(spans == 2 * kShards);
  // The load's trial makes sample 0 in a child, then in the launching
  // process, each from its bytes alone (a ranged GET), with no shard in the
  // cache; then the worker makes its first sample.
  std::istringstream counts(read_file(work + "/first-counts.txt"));
  std::vector<int> seen;
  for (int n; counts >> n;) seen.push_back(n);
  INFO(read_file(work + "/first-counts.txt"));
  REQUIRE(seen.size() == 3);
  CHECK(seen[0] == 0);
  CHECK(seen[1] == 0);
  CHECK(seen[2] < kShards);
  for (int s = 0; s < kShards; ++s) CHECK(gets(http, s, f) == 1);
  CHECK(ranged(http, 0, f) == 2);
}

// A server without ranges answers the trial's ranged read with the whole
// shard: refused at its headers, the shard comes whole into the cache.
void server_without_ranges(const Format& f) {
  if (cli().empty()) SKIP_TEST(kNoCli);
  if (!Nginx::why_not().empty()) SKIP_TEST(Nginx::why_not());
  const std::string shards = make_shards(2000, f), work = temp_dir("run");
  Nginx http(shards, "", false, /*ranges=*/false);
  const std::string extra = "  batch_size = 4, workers = 2, epochs = 1,\n";
  write_file(work + "/local.lua", pipeline(shards + "/train-*." + f.ext, extra, "", f));
  write_file(work + "/http.lua", pipeline(http_glob(http, f), extra, "", f));
  Run r = sh(work, cli() + " run local.lua --quiet --record local.jsonl");
  REQUIRE(r.status == 0);
  r = sh(work, "SLUICE_CACHE_DIR=cache " + cli() + " run http.lua --record http.jsonl");
  INFO(r.out);
  REQUIRE(r.status == 0);
  CHECK(sh(work, cli() + " verify local.jsonl http.jsonl").status == 0);
  CHECK(ranged(http, 0, f) == 0);
  for (int s = 1; s < kShards; ++s) CHECK(gets(http, s, f) == 1);
  // The shard the trial's child downloaded whole is counted, though the
  // child is gone: every shard and index once, and the refused ranged GET.
  CHECK_THAT(r.out, Catch::Contains("remote      16 objects: 0 from the node cache, 16 downloaded"));
  CHECK_THAT(r.out, Catch::Contains(" 17 requests,"));
}

// The shard of sample 0 gone from the server (its index still there): the
// load fails with the URL's 404 under on_error = "skip" too, asking the
// server once per process, not once per sample of the data set.
void trial_shard_missing(const Format& f) {
  if (cli().empty()) SKIP_TEST(kNoCli);
  if (!Nginx::why_not().empty()) SKIP_TEST(Nginx::why_not());
  const std::string shards = make_shards(2000, f), work = temp_dir("run");
  REQUIRE(::unlink((shards + "/" + shard_name(0, f)).c_str()) == 0);
  Nginx http(shards);
  write_file(work + "/http.lua",
             pipeline(http_glob(http, f), "  batch_size = 4, workers = 1, epochs = 1, on_error = 'skip',\n", "", f));
  const Run r = sh(work, "SLUICE_CACHE_DIR=cache " + cli() + " run http.lua");
  INFO(r.out);
  CHECK(r.status != 0);
  CHECK_THAT(r.out, Catch::Contains(shard_name(0, f) + ": HTTP 404"));
  CHECK(http.requests("GET", "/" + shard_name(0, f)) <= 2);  // the trial's child, then the launcher
  for (int s = 1; s < kShards; ++s) CHECK(http.requests("GET", "/" + shard_name(s, f)) == 0);
}

void cache_limit_holds(const Format& f) {
  if (cli().empty()) SKIP_TEST(kNoCli);
  if (!Nginx::why_not().empty()) SKIP_TEST(Nginx::why_not());
  const std::string shards = make_shards(25'000, f), work = temp_dir("run");  // 8 shards of 0.3 MB
  std::uint64_t largest = 0, total = 0;
  for (int s = 0; s < kShards; ++s) {
    struct stat st{};
    REQUIRE(::stat((shards + "/" + shard_name(s, f)).c_str(), &st) == 0);
    largest = std::max<std::uint64_t>(largest, st.st_size);
    total += st.st_size;
  }
  constexpr std::uint64_t kLimit = 1 << 20;
  REQUIRE(total > 2 * kLimit);
  Nginx http(shards, "8m");
  const std::string extra = "  batch_size = 4, workers = 2, epochs = 2,\n";
  write_file(work + "/local.lua", pipeline(shards + "/train-*." + f.ext, extra, "", f));
  write_file(work + "/http.lua", pipeline(http_glob(http, f), extra, "", f));
  Run r = sh(work, cli() + " run local.lua --quiet --record local.jsonl");
  REQUIRE(r.status == 0);
  std::atomic<bool> done{false};
  std::uint64_t most = 0;
  ::mkdir((work + "/cache").c_str(), 0755);
  std::thread sampler([&] {
    while (!done.load()) {
      most = std::max(most, cache_bytes(work + "/cache"));
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  r = sh(work, "SLUICE_CACHE_DIR=cache " + cli() + " run http.lua --cache-limit-mb 1 --record http.jsonl");
  done = true;
  sampler.join();
  INFO(r.out);
  REQUIRE(r.status == 0);
  CHECK(sh(work, cli() + " verify local.jsonl http.jsonl").status == 0);
  CHECK_THAT(r.out, Catch::Contains("(cache_limit_mb passed by at most "));
  INFO("most bytes in the cache: " << most << ", limit " << kLimit << ", largest shard " << largest);
  CHECK(most > 0);
  CHECK(most <= kLimit + 2 * largest);  // two workers, a batch in one shard
  CHECK(cache_bytes(work + "/cache") <= kLimit + 2 * largest);
  // Evicted and fetched again in the second epoch: more GETs than shards.
  int all = 0;
  for (int s = 0; s < kShards; ++s) all += gets(http, s, f);
  CHECK(all > kShards);
}

}  // namespace

TEST_CASE("Prefetch: TFRecord with indexes beside it over local, http:// and s3:// gives identical records, fetched by the workers") { same_records(kTFRecord); }
TEST_CASE("Prefetch: tar with indexes beside it over local, http:// and s3:// gives identical records, fetched by the workers") { same_records(kTar); }

TEST_CASE("Prefetch: over a server without ranges, the load reads sample 0 from its whole shard") { server_without_ranges(kTFRecord); }
TEST_CASE("Prefetch: over a server without ranges, the load reads sample 0 from its whole shard (tar)") { server_without_ranges(kTar); }
TEST_CASE("Prefetch: sample 0's shard missing fails the load with its 404 under skip too, asking once per process") { trial_shard_missing(kTFRecord); }
TEST_CASE("Prefetch: the first batch is made before the last shard is downloaded") { first_batch_early(kTFRecord); }
TEST_CASE("Prefetch: the first batch is made before the last shard is downloaded (tar)") { first_batch_early(kTar); }

TEST_CASE("Prefetch: cache_limit_mb below the data set holds while the run goes, past it by one shard a worker at most") { cache_limit_holds(kTFRecord); }
TEST_CASE("Prefetch: cache_limit_mb below the data set holds while the run goes, past it by one shard a worker at most (tar)") { cache_limit_holds(kTar); }

TEST_CASE("Prefetch: a store stopped mid-run ends the run with its URL and a state, and the rerun resumes from the cache") {
  if (cli().empty()) SKIP_TEST(kNoCli);
  if (!Nginx::why_not().empty()) SKIP_TEST(Nginx::why_not());
  const std::string shards = make_shards(20'000), work = temp_dir("run");
  Nginx http(shards, "1m");  // about 0.25 s a shard
  const std::string extra = "  batch_size = 4, workers = 2, epochs = 1,\n";
  write_file(work + "/local.lua", pipeline(shards + "/train-*.tfrecord", extra));
  write_file(work + "/http.lua", pipeline(http_glob(http), extra));
  std::thread chaos([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(700));
    http.stop();
  });
  // No fetching ahead: the shards come as the batches need them, so the
  // store stops with some of them still to fetch.
  Run r = sh(work, "SLUICE_CACHE_DIR=cache " + cli() +
                       " run http.lua --remote-retries 1 --remote-timeout-ms 2000 --remote-prefetch-mb 0"
                       " --record first.jsonl");
  chaos.join();
  INFO(r.out);
  REQUIRE(r.status != 0);
  CHECK_THAT(r.out, Catch::Contains(http.url("train-")) && Catch::Contains("state saved to sluice-state.json"));
  int before[kShards];
  for (int s = 0; s < kShards; ++s) before[s] = gets(http, s);
  std::vector<int> cached;
  for (int s = 0; s < kShards; ++s) {
    const Run ls = sh(work, "ls cache | grep -c -- '-" + shard_name(s) + "$' || true");
    if (std::atoi(ls.out.c_str()) == 1) cached.push_back(s);
  }
  CHECK(cached.size() < static_cast<std::size_t>(kShards));

  http.start();
  // (A copy for the local run: the resumed run, ending whole, removes the state it resumed from.)
  REQUIRE(sh(work, "cp sluice-state.json stopped.json").status == 0);
  r = sh(work, "SLUICE_CACHE_DIR=cache " + cli() + " run http.lua --resume sluice-state.json --record resumed.jsonl");
  INFO(r.out);
  REQUIRE(r.status == 0);
  r = sh(work, cli() + " run local.lua --quiet --resume stopped.json --record local.jsonl");
  INFO(r.out);
  REQUIRE(r.status == 0);
  r = sh(work, cli() + " verify local.jsonl resumed.jsonl");
  INFO(r.out);
  CHECK(r.status == 0);
  for (int s : cached) CHECK(gets(http, s) == before[s]);  // reused, not fetched again
}

TEST_CASE("Prefetch: two ranks sharing one cache download each shard once") {
  if (cli().empty()) SKIP_TEST(kNoCli);
  if (!Nginx::why_not().empty()) SKIP_TEST(Nginx::why_not());
  const std::string shards = make_shards(20'000), work = temp_dir("run");
  Nginx http(shards, "4m");
  const std::string extra = "  batch_size = 3, shuffle = true, seed = 5, workers = 2, epochs = 1,\n";
  write_file(work + "/local.lua", pipeline(shards + "/train-*.tfrecord", extra));
  write_file(work + "/http.lua", pipeline(http_glob(http), extra));
  check_two_ranks(work);
  for (int s = 0; s < kShards; ++s) CHECK(gets(http, s) == 1);
}

TEST_CASE("Prefetch: a tar's truncated or garbage index is an error naming it, a missing one a note and a download at open") {
  if (cli().empty()) SKIP_TEST(kNoCli);
  if (!Nginx::why_not().empty()) SKIP_TEST(Nginx::why_not());
  const std::string shards = make_shards(2000, kTar), work = temp_dir("run");
  Nginx http(shards);
  const std::string extra = "  batch_size = 5, workers = 2, epochs = 1,\n";
  write_file(work + "/local.lua", pipeline(shards + "/train-*.tar", extra, "", kTar));
  write_file(work + "/http.lua", pipeline(http_glob(http, kTar), extra, "", kTar));
  const std::string idx = shards + "/" + shard_name(3, kTar) + ".idx", url = http.url(shard_name(3, kTar) + ".idx");
  const std::string whole = read_file(idx);

  write_file(idx, whole.substr(0, whole.size() / 2));
  Run r = sh(work, "SLUICE_CACHE_DIR=cache1 " + cli() + " run http.lua --quiet");
  INFO(r.out);
  CHECK(r.status != 0);
  CHECK_THAT(r.out, Catch::Contains("sluice.tar: " + url + ": not a valid tar index at byte") &&
                        Catch::Contains("truncated"));

  // Its members said to lie past a shard of 1024 bytes.
  const std::size_t at = whole.find("shard_bytes ") + 12;
  write_file(idx, whole.substr(0, at) + "1024" + whole.substr(whole.find('\n', at)));
  r = sh(work, "SLUICE_CACHE_DIR=cache2 " + cli() + " run http.lua --quiet");
  INFO(r.out);
  CHECK(r.status != 0);
  CHECK_THAT(r.out, Catch::Contains("sluice.tar: " + url + ": not a valid tar index") &&
                        Catch::Contains("lies past the shard's 1024 bytes"));
  for (int s = 0; s < kShards; ++s) CHECK(http.requests("GET", "/" + shard_name(s, kTar)) == 0);  // none for a bad index

  ::unlink(idx.c_str());
  r = sh(work, cli() + " run local.lua --quiet --record local.jsonl");
  REQUIRE(r.status == 0);
  r = sh(work, "SLUICE_CACHE_DIR=cache3 " + cli() + " run http.lua --record http.jsonl");
  INFO(r.out);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.out, Catch::Contains("sluice.tar: no index beside every shard (" + url) &&
                        Catch::Contains("so every shard is downloaded when the source opens"));
  CHECK(sh(work, cli() + " verify local.jsonl http.jsonl").status == 0);
  for (int s = 0; s < kShards; ++s) CHECK(gets(http, s, kTar) == 1);
}

TEST_CASE("Prefetch: with the locality shuffle and a cache of its windows, an epoch downloads each shard once") {
  if (cli().empty()) SKIP_TEST(kNoCli);
  if (!Nginx::why_not().empty()) SKIP_TEST(Nginx::why_not());
  const std::string shards = make_shards(25'000), work = temp_dir("run");  // 8 shards of 0.3 MB: 2.4 MB
  Nginx http(shards, "8m");
  // Windows of 2 shards, a cache of about 6: every window's shards fit with
  // the next window's, and nothing is fetched for an epoch the run will not
  // read (the plan goes on past the run's end). At most one shard twice:
  // the one the launching process fetched to check sample 0, which no
  // worker pins until its window comes, may be evicted for a needed one
  // while both workers pin theirs (Belady: its next use is the furthest).
  const std::string extra = "  batch_size = 4, workers = 2, epochs = 1, shuffle = true, shuffle_window = 2,\n";
  write_file(work + "/http.lua", pipeline(http_glob(http), extra));
  const Run r = sh(work, "SLUICE_CACHE_DIR=cache " + cli() + " run http.lua --quiet --cache-limit-mb 2");
  INFO(r.out);
  REQUIRE(r.status == 0);
  int all = 0;
  for (int s = 0; s < kShards; ++s) {
    INFO(shard_name(s));
    CHECK(gets(http, s) >= 1);
    all += gets(http, s);
  }
  CHECK(all <= kShards + 1);
}

TEST_CASE("Prefetch: a tar shard rewritten at the same size beside its old index is refused, naming both") {
  if (cli().empty()) SKIP_TEST(kNoCli);
  if (!Nginx::why_not().empty()) SKIP_TEST(Nginx::why_not());
  const std::string shards = make_shards(2000, kTar), work = temp_dir("run");
  // Shard 3 written again with its samples in reverse order: the same bytes
  // in all, the old index left beside it.
  const std::string path = shards + "/" + shard_name(3, kTar);
  const std::uint64_t before = std::filesystem::file_size(path);
  {
    sluice::io::TarWriter tar(path);
    for (int i = kPerShard - 1; i >= 0; --i) {
      const std::string record = "r" + std::to_string(1000 + 3 * kPerShard + i) + random_bytes(2000 + i, 300 + i);
      tar.add(std::to_string(3 * kPerShard + i) + ".bin", std::as_bytes(std::span(record.data(), record.size())));
      tar.end_sample();
    }
    tar.finish();
  }
  REQUIRE(std::filesystem::file_size(path) == before);
  Nginx http(shards);
  write_file(work + "/http.lua", pipeline(http_glob(http, kTar), "  batch_size = 5, workers = 2, epochs = 1,\n", "", kTar));
  const Run r = sh(work, "SLUICE_CACHE_DIR=cache " + cli() + " run http.lua --quiet");
  INFO(r.out);
  CHECK(r.status != 0);
  CHECK_THAT(r.out, Catch::Contains(http.url(shard_name(3, kTar)) + ".idx does not describe the shard (sample 0: "
                                    "the index says key \"36\", the shard holds \"47\")") &&
                        Catch::Contains("sluice index"));
  // Never kept: a rerun downloads it again (and refuses it again).
  DIR* d = ::opendir((work + "/cache").c_str());
  REQUIRE(d != nullptr);
  while (dirent* e = ::readdir(d)) CHECK_FALSE(std::string(e->d_name).ends_with("-" + shard_name(3, kTar)));
  ::closedir(d);
}
