// Faults between the cache and the store: 503 bursts, resets, cut bodies and
// stalls (a fault-injecting proxy in front of nginx), a server killed and
// restarted mid-download, and a store that stays down.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <sys/wait.h>

#include <chrono>
#include <thread>

#include "fault_proxy.h"
#include "servers.h"
#include "skip.h"
#include "sluice/error.h"
#include "sluice/remote/cache.h"

using namespace sluice::remote;
using namespace sluice::test;

namespace {

CacheOptions quick(const std::string& dir, unsigned retries = 6) {
  CacheOptions o;
  o.dir = dir;
  o.transfer.backoff_ms = 20;
  o.transfer.max_retries = retries;
  o.transfer.stall_timeout_ms = 1000;
  o.transfer.s3 = S3Config{};
  return o;
}

int count_containing(const std::vector<std::string>& lines, const std::string& what) {
  int n = 0;
  for (const std::string& l : lines) n += l.find(what) != std::string::npos;
  return n;
}

}  // namespace

TEST_CASE("Faults: 503 bursts, resets and cut bodies are retried and resumed with Range, and the data is whole") {
  if (!Nginx::why_not().empty()) SKIP_TEST(Nginx::why_not());
  const std::string root = temp_dir("www");
  const std::string data = random_bytes(1'000'000, 5);
  write_file(root + "/x.bin", data);
  Nginx http(root);
  // One GET (no HEAD first): refused twice, then cut twice between a 503 and a reset.
  FaultProxy proxy(http.port(), {Fault::status_503, Fault::reset, Fault::cut, Fault::status_503, Fault::cut,
                                 Fault::reset, Fault::pass});
  Cache cache(quick(temp_dir("cache")));
  const std::string path = cache.get(proxy.url("x.bin"));
  CHECK(read_file(path) == data);
  CHECK(cache.stats().transfer.retries == 6);
  CHECK(proxy.requests() == 7);
  // nginx saw the whole GET that was cut, then two resumed ranges.
  const std::vector<std::string> log = http.log();
  REQUIRE(log.size() == 3);
  CHECK_THAT(log[0], Catch::StartsWith("GET /x.bin 200"));
  CHECK_THAT(log[1], Catch::StartsWith("GET /x.bin 206") && Catch::Contains("\"bytes=500"));
  CHECK_THAT(log[2], Catch::StartsWith("GET /x.bin 206") && Catch::Contains("\"bytes=7"));
}

TEST_CASE("Faults: a stalled body is dropped after the stall timeout and resumed") {
  if (!Nginx::why_not().empty()) SKIP_TEST(Nginx::why_not());
  const std::string root = temp_dir("www");
  const std::string data = random_bytes(200'000, 6);
  write_file(root + "/x.bin", data);
  Nginx http(root);
  FaultProxy proxy(http.port(), {Fault::stall}, 5000);  // the GET stalls after its first bytes
  Cache cache(quick(temp_dir("cache")));
  const auto start = std::chrono::steady_clock::now();
  CHECK(read_file(cache.get(proxy.url("x.bin"))) == data);
  const auto took = std::chrono::steady_clock::now() - start;
  CHECK(took < std::chrono::milliseconds(4500));  // gave up on the stall, did not wait it out
  CHECK(cache.stats().transfer.retries == 1);
  CHECK(count_containing(http.log(), "\"bytes=10-\"") == 1);
}

TEST_CASE("Faults: a server killed mid-download and restarted: the downloads finish whole") {
  if (!Nginx::why_not().empty()) SKIP_TEST(Nginx::why_not());
  const std::string root = temp_dir("www");
  for (int i = 0; i < 4; ++i) write_file(root + "/s" + std::to_string(i), random_bytes(400'000, 10 + i));
  Nginx http(root, "1m");
  std::vector<std::string> urls;
  for (int i = 0; i < 4; ++i) urls.push_back(http.url("s" + std::to_string(i)));
  std::thread chaos([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    http.stop();
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
    http.start();
  });
  Cache cache(quick(temp_dir("cache"), 10));
  std::vector<std::string> paths;
  try {
    paths = cache.get_all(urls);
  } catch (...) {
    chaos.join();
    throw;
  }
  chaos.join();
  for (int i = 0; i < 4; ++i) CHECK(read_file(paths[i]) == random_bytes(400'000, 10 + i));
  CHECK(cache.stats().transfer.retries > 0);
}

TEST_CASE("Faults: a store down past the retries is one error, and the rerun fetches only what is missing") {
  if (!Nginx::why_not().empty()) SKIP_TEST(Nginx::why_not());
  const std::string root = temp_dir("www"), dir = temp_dir("cache");
  for (int i = 0; i < 3; ++i) write_file(root + "/s" + std::to_string(i), random_bytes(1000, i));
  Nginx http(root);
  std::vector<std::string> urls;
  for (int i = 0; i < 3; ++i) urls.push_back(http.url("s" + std::to_string(i)));
  Cache(quick(dir)).get(urls[0]);
  http.stop();
  CHECK_THROWS_WITH(Cache(quick(dir, 2)).get_all(urls),
                    Catch::StartsWith(http.url("s")) && Catch::Contains(": Couldn't connect to server") &&
                        Catch::Contains("(gave up after 2 retries)"));
  http.start();
  Cache again(quick(dir));
  again.get_all(urls);
  CHECK(again.stats().hits == 1);
  CHECK(again.stats().misses == 2);
  CHECK(http.requests("GET", "/s0") == 1);
  CHECK(http.requests("GET", "/s1") == 1);
}
