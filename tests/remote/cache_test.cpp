// The node cache: atomic publication, one download per node across real
// processes, resumption after kill -9, and the byte budget with eviction by
// next use; the Prefetcher a worker fetches ahead with. Served by a real nginx
// on 127.0.0.1; its access log counts requests.
#include <catch2/catch.hpp>

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <random>
#include <thread>

#include "fault_proxy.h"
#include "servers.h"
#include "skip.h"
#include "sluice/error.h"
#include "sluice/remote/cache.h"
#include "sluice/remote/prefetcher.h"

using namespace sluice::remote;
using namespace sluice::test;

namespace {

CacheOptions options_in(const std::string& dir, std::uint64_t limit = 0) {
  CacheOptions o;
  o.dir = dir;
  o.limit = limit;
  o.transfer.backoff_ms = 10;
  o.transfer.max_retries = 3;
  o.transfer.s3 = S3Config{};
  return o;
}

// The same, for the S3 store at `endpoint` (s3rver's credentials).
CacheOptions s3_options_in(const std::string& dir, const std::string& endpoint) {
  CacheOptions o = options_in(dir);
  o.transfer.s3.endpoint = endpoint;
  o.transfer.s3.path_style = true;
  o.transfer.s3.credentials = {.access_key = "S3RVER", .secret_key = "S3RVER", .session_token = "", .source = "test"};
  return o;
}

std::vector<std::string> names_in(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = ::opendir(dir.c_str());
  while (dirent* e = d ? ::readdir(d) : nullptr)
    if (e->d_name[0] != '.') out.push_back(e->d_name);
  if (d) ::closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

std::string shard_name(int i) { return "s" + std::to_string(i) + ".bin"; }

// Runs body(p) in `processes` forked children at once; each child exits with
// the count of bad reads body returns (100 for an exception), and every one
// must exit 0.
void in_processes(int processes, const std::function<int(int)>& body) {
  std::vector<pid_t> children;
  for (int p = 0; p < processes; ++p) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      int bad = 0;
      try {
        bad = body(p);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "child %d: %s\n", p, e.what());
        bad = 100;
      }
      ::_exit(bad);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
}

}  // namespace

TEST_CASE("Cache: a miss downloads and publishes the whole object, and the next Cache finds it") {
  if (!Nginx::why_not().empty()) SKIP_TEST(Nginx::why_not());
  const std::string root = temp_dir("www"), dir = temp_dir("cache") + "/nested/cache";
  for (int i = 0; i < 5; ++i) write_file(root + "/" + shard_name(i), random_bytes(50'000 + i, i));
  Nginx http(root);
  std::vector<std::string> urls;
  for (int i = 0; i < 5; ++i) urls.push_back(http.url(shard_name(i)));
  {
    Cache cache(options_in(dir));
    const std::vector<std::string> paths = cache.get_all(urls);
    REQUIRE(paths.size() == 5);
    for (int i = 0; i < 5; ++i) {
      CHECK(paths[i] == cache.path_of(urls[i]));
      CHECK(read_file(paths[i]) == random_bytes(50'000 + i, i));
      CHECK(http.requests("GET", "/" + shard_name(i)) == 1);
    }
    CHECK(cache.stats().misses == 5);
    CHECK(cache.stats().hits == 0);
    CHECK(cache.stats().transfer.bytes >= 5 * 50'000);
    // One request an object: a GET, whose headers bring the length and ETag.
    CHECK(cache.stats().transfer.requests == 5);
    CHECK(http.log().size() == 5);
    // Only whole objects, their lock files and their versions (.meta) are left.
    for (const std::string& name : names_in(dir)) {
      CHECK_THAT(name, !Catch::EndsWith(".partial"));
      if (name.size() > 5 && name.compare(name.size() - 5, 5, ".meta") == 0)
        CHECK(::access((dir + "/" + name.substr(0, name.size() - 5)).c_str(), F_OK) == 0);
    }
  }
  Cache again(options_in(dir));
  again.get_all(urls);
  CHECK(again.stats().hits == 5);
  CHECK(again.stats().misses == 0);
  CHECK(again.stats().transfer.requests == 0);
  CHECK(again.stats().revalidated == 5);
  CHECK(again.stats().changed == 0);
  // A GET each from the first Cache; one conditional HEAD each
  // (revalidation, no body) from the second.
  CHECK(http.log().size() == 10);
  for (int i = 0; i < 5; ++i) CHECK(http.requests("GET", "/" + shard_name(i)) == 1);
}

TEST_CASE("Cache: processes sharing a directory download each object once (stress)") {
  if (!Nginx::why_not().empty()) SKIP_TEST(Nginx::why_not());
  const std::string root = temp_dir("www"), dir = temp_dir("cache");
  constexpr int shards = 16, processes = 6;
  for (int i = 0; i < shards; ++i) write_file(root + "/" + shard_name(i), random_bytes(100'000 + i, i));
  Nginx http(root, "4m");  // slow enough that the processes overlap
  in_processes(processes, [&](int p) {
    int bad = 0;
    std::vector<std::string> urls;
    for (int i = 0; i < shards; ++i) urls.push_back(http.url(shard_name(i)));
    std::shuffle(urls.begin(), urls.end(), std::mt19937(p));
    Cache cache(options_in(dir));
    const std::vector<std::string> paths = cache.get_all(urls);
    for (std::size_t k = 0; k < urls.size(); ++k) {
      const int i = std::stoi(urls[k].substr(urls[k].rfind("/s") + 2));
      if (read_file(paths[k]) != random_bytes(100'000 + i, i)) ++bad;
    }
    return bad;
  });
  for (int i = 0; i < shards; ++i) CHECK(http.requests("GET", "/" + shard_name(i)) == 1);
}

TEST_CASE("Cache: processes sharing a budget evict only what no one pins, and read only whole objects (stress)") {
  if (!Nginx::why_not().empty()) SKIP_TEST(Nginx::why_not());
  const std::string root = temp_dir("www"), dir = temp_dir("cache");
  constexpr int shards = 12, processes = 4, rounds = 30;
  constexpr std::size_t size = 50'000;
  for (int i = 0; i < shards; ++i) write_file(root + "/" + shard_name(i), random_bytes(size, 100 + i));
  Nginx http(root);
  in_processes(processes, [&](int p) {
    int bad = 0;
    Cache cache(options_in(dir, 4 * size));  // room for 4 of 12
    std::mt19937 rng(p);
    for (int r = 0; r < rounds; ++r) {
      const int i = static_cast<int>(rng() % shards);
      const std::string url = http.url(shard_name(i));
      const std::string path = cache.get(url);
      if (read_file(path) != random_bytes(size, 100 + i)) ++bad;  // pinned: whole, never evicted meanwhile
      cache.release(url);
    }
    return bad;
  });
  // What is left fits the budget, give or take the objects pinned at the end
  // (none now), and nothing partial is left behind.
  std::uint64_t whole = 0;
  for (const std::string& name : names_in(dir)) {
    CHECK_THAT(name, !Catch::EndsWith(".partial"));
    if (!Catch::EndsWith(".lock").match(name) && !Catch::EndsWith(".meta").match(name))
      whole += static_cast<std::uint64_t>(read_file(dir + "/" + name).size());
  }
  CHECK(whole <= (4 + processes) * size);
  int gets = 0;
  for (int i = 0; i < shards; ++i) gets += http.requests("GET", "/" + shard_name(i));
  CHECK(gets > shards);  // objects were evicted and fetched again
}

namespace {

// A process fetching `small` then `big` into `dir`, killed with -9 once big's
// partial holds 500 kB: the partial's length (nothing of big reads as whole).
std::uint64_t kill_mid_download(const std::string& dir, const std::string& small, const std::string& big,
                                std::uint64_t size) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    try {
      Cache cache(options_in(dir));
      cache.get(small);
      cache.get(big);
    } catch (...) {
    }
    ::_exit(0);
  }
  const std::string path = Cache(options_in(dir)).path_of(big);
  struct stat st{};
  for (int i = 0; i < 500 && (::stat((path + ".partial").c_str(), &st) != 0 || st.st_size < 500'000); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  REQUIRE(::stat((path + ".partial").c_str(), &st) == 0);
  const auto cut = static_cast<std::uint64_t>(st.st_size);
  CHECK(cut > 0);
  CHECK(cut < size);
  CHECK(::stat(path.c_str(), &st) != 0);  // nothing reads as whole
  return cut;
}

}  // namespace

TEST_CASE("Cache: after kill -9 mid-download the rerun resumes the partial and never reads it as whole") {
  if (!Nginx::why_not().empty()) SKIP_TEST(Nginx::why_not());
  const std::string root = temp_dir("www"), dir = temp_dir("cache");
  const std::string data = random_bytes(3'000'000, 42);
  write_file(root + "/big.bin", data);
  write_file(root + "/small.bin", "small");
  Nginx http(root, "2m");
  const std::string big = http.url("big.bin"), small = http.url("small.bin");
  const std::uint64_t cut = kill_mid_download(dir, small, big, data.size());

  Cache cache(options_in(dir));
  CHECK(read_file(cache.get(small)) == "small");
  CHECK(cache.stats().hits == 1);  // the child had published it
  CHECK(read_file(cache.get(big)) == data);
  CHECK(cache.stats().misses == 1);
  // The rerun asked only for the rest.
  const std::vector<std::string> log = http.log();
  REQUIRE_FALSE(log.empty());
  CHECK_THAT(log.back(), Catch::StartsWith("GET /big.bin 206"));
  CHECK_THAT(log.back(), Catch::Contains("\"bytes=" + std::to_string(cut) + "-\""));
}

TEST_CASE("Cache: a partial whose object changed since is not resumed: 412, then the new version whole") {
  if (!Nginx::why_not().empty()) SKIP_TEST(Nginx::why_not());
  const std::string root = temp_dir("www"), dir = temp_dir("cache");
  const std::string data = random_bytes(3'000'000, 42), changed = random_bytes(3'000'000, 43);
  write_file(root + "/big.bin", data);
  write_file(root + "/small.bin", "small");
  Nginx http(root, "2m");
  const std::string big = http.url("big.bin"), small = http.url("small.bin");
  kill_mid_download(dir, small, big, data.size());
  sleep(1);  // nginx's ETag counts whole seconds: the same length needs a new mtime
  write_file(root + "/big.bin", changed);
  Cache cache(options_in(dir));
  CHECK(read_file(cache.get(big)) == changed);
  const std::vector<std::string> log = http.log();
  REQUIRE(log.size() >= 2);
  CHECK_THAT(log[log.size() - 2], Catch::StartsWith("GET /big.bin 412"));  // Range + If-Match on the old ETag
  CHECK_THAT(log.back(), Catch::StartsWith("GET /big.bin 200"));
}

TEST_CASE("Cache: a store that ignores If-Match on a resumed partial does not join two versions") {
  if (!Nginx::why_not().empty()) SKIP_TEST(Nginx::why_not());
  const std::string root = temp_dir("www"), dir = temp_dir("cache");
  const std::string data = random_bytes(3'000'000, 42), changed = random_bytes(3'000'000, 43);
  write_file(root + "/big.bin", data);
  Nginx http(root);
  // Requests 1-4 (a GET and its 3 retries) are cut halfway: the download
  // fails, leaving a partial of the first version. Then every request loses
  // its If-Match, as a store ignoring the condition: the resumed Range gets
  // 206 with the new version's ETag and bytes. (No fork here: the proxy's
  // thread would be in the child's way.)
  FaultProxy proxy(http.port(), {Fault::cut, Fault::cut, Fault::cut, Fault::cut, Fault::no_if_match,
                                 Fault::no_if_match, Fault::no_if_match});
  const std::string big = proxy.url("big.bin");
  CHECK_THROWS_AS(Cache(options_in(dir)).get(big), sluice::Error);
  const std::string partial = Cache(options_in(dir)).path_of(big) + ".partial";
  struct stat st{};
  REQUIRE(::stat(partial.c_str(), &st) == 0);
  REQUIRE(st.st_size > 0);
  REQUIRE(static_cast<std::size_t>(st.st_size) < data.size());
  sleep(1);  // nginx's ETag counts whole seconds: the same length needs a new mtime
  write_file(root + "/big.bin", changed);
  Cache cache(options_in(dir));
  CHECK(read_file(cache.get(big)) == changed);  // not the old head and the new tail
  const std::vector<std::string> log = http.log();
  REQUIRE(log.size() >= 2);
  CHECK_THAT(log[log.size() - 2], Catch::StartsWith("GET /big.bin 206"));  // the Range the store answered anyway
  CHECK_THAT(log.back(), Catch::StartsWith("GET /big.bin 200"));         // refused, and started over
}

TEST_CASE("Cache: the budget evicts the object used furthest ahead, never one in use") {
  if (!Nginx::why_not().empty()) SKIP_TEST(Nginx::why_not());
  const std::string root = temp_dir("www"), dir = temp_dir("cache");
  for (int i = 0; i < 6; ++i) write_file(root + "/" + shard_name(i), random_bytes(10'000, i));
  Nginx http(root);
  std::vector<std::string> urls;
  for (int i = 0; i < 6; ++i) urls.push_back(http.url(shard_name(i)));
  Cache cache(options_in(dir, 30'000));  // room for three
  // Next uses: s0 at 10, s1 at 50, s2 at 20, s3.. soon.
  cache.set_next_use(urls, [&](const std::string& url) -> std::uint64_t {
    const int i = std::stoi(url.substr(url.rfind("/s") + 2));
    const std::uint64_t next[] = {10, 50, 20, 1, 2, 3};
    return next[i];
  });
  for (int i = 0; i < 3; ++i) {
    cache.get(urls[i]);
    cache.release(urls[i]);
  }
  cache.get(urls[3]);  // s1, used furthest ahead, goes
  struct stat st{};
  CHECK(::stat(cache.path_of(urls[1]).c_str(), &st) != 0);
  CHECK(::stat(cache.path_of(urls[0]).c_str(), &st) == 0);
  CHECK(::stat(cache.path_of(urls[2]).c_str(), &st) == 0);
  CHECK(cache.stats().evictions == 1);
  cache.get(urls[4]);  // then s2 (20) before s0 (10); s3 is pinned
  CHECK(::stat(cache.path_of(urls[2]).c_str(), &st) != 0);
  CHECK(::stat(cache.path_of(urls[0]).c_str(), &st) == 0);
  CHECK(::stat(cache.path_of(urls[3]).c_str(), &st) == 0);
  // Everything pinned: the next object still comes, passing the budget by one.
  cache.get(urls[0]);
  cache.get(urls[5]);
  CHECK(::stat(cache.path_of(urls[0]).c_str(), &st) == 0);
  CHECK(::stat(cache.path_of(urls[5]).c_str(), &st) == 0);
  CHECK(cache.stats().evictions == 2);
  // Another process's pin counts too: a second Cache cannot evict s5.
  Cache other(options_in(dir, 10'000));
  other.get(urls[1]);
  CHECK(::stat(cache.path_of(urls[5]).c_str(), &st) == 0);
  CHECK(other.stats().evictions == 0);
}

TEST_CASE("Cache: a failed download names the URL and leaves nothing that reads as whole") {
  if (!Nginx::why_not().empty()) SKIP_TEST(Nginx::why_not());
  const std::string root = temp_dir("www"), dir = temp_dir("cache");
  write_file(root + "/ok.bin", "ok");
  Nginx http(root);
  Cache cache(options_in(dir));
  CHECK_THROWS_WITH(cache.get_all({http.url("ok.bin"), http.url("missing.bin")}),
                    http.url("missing.bin") + ": HTTP 404");
  struct stat st{};
  CHECK(::stat(cache.path_of(http.url("missing.bin")).c_str(), &st) != 0);
  // Nor an empty partial: a 404 leaves nothing to resume.
  CHECK(::stat((cache.path_of(http.url("missing.bin")) + ".partial").c_str(), &st) != 0);
}

TEST_CASE("Cache: many cached objects of one S3 folder are checked with one listing, a changed one fetched again") {
  if (!S3rver::why_not().empty()) SKIP_TEST(S3rver::why_not());
  S3rver s3(temp_dir("s3"), "bkt");
  CacheOptions o = s3_options_in(temp_dir("cache"), s3.endpoint());
  // 20 objects in train/ (past the listing's threshold of 16), 3 in few/.
  std::vector<std::string> urls, few;
  for (int i = 0; i < 20; ++i) {
    s3.put("train/" + shard_name(i), random_bytes(1000 + i, i));
    urls.push_back("s3://bkt/train/" + shard_name(i));
  }
  for (int i = 0; i < 3; ++i) {
    s3.put("few/" + shard_name(i), random_bytes(500 + i, 40 + i));
    few.push_back("s3://bkt/few/" + shard_name(i));
  }
  std::vector<std::string> all = urls;
  all.insert(all.end(), few.begin(), few.end());
  {
    Cache cold(o);
    cold.get_all(all);
    CHECK(cold.stats().misses == 23);
  }
  {
    Cache warm(o);
    warm.get_all(all);
    CHECK(warm.stats().hits == 23);
    CHECK(warm.stats().revalidated == 23);
    CHECK(warm.stats().revalidation_requests == 1 + 3);  // train/ listed once; few/ one HEAD each
    CHECK(warm.stats().changed == 0);
    CHECK(warm.stats().transfer.requests == 0);
  }
  // One object replaced in the store: the listing shows its new ETag.
  s3.put("train/" + shard_name(7), "new contents");
  {
    Cache again(o);
    const std::vector<std::string> paths = again.get_all(urls);
    CHECK(again.stats().changed == 1);
    CHECK(again.stats().misses == 1);
    CHECK(read_file(paths[7]) == "new contents");
    CHECK(read_file(paths[6]) == random_bytes(1006, 6));
  }
}

// remote::Prefetcher on its own: the needed objects first, ahead only within

TEST_CASE("Cache: a folder the credentials may not list is checked with HEADs, a changed object still found") {
  if (!S3rver::why_not().empty()) SKIP_TEST(S3rver::why_not());
  S3rver s3(temp_dir("s3"), "bkt");
  CacheOptions o = s3_options_in(temp_dir("cache"), s3.endpoint());
  std::vector<std::string> urls;
  for (int i = 0; i < 20; ++i) {
    s3.put("train/" + shard_name(i), random_bytes(1000 + i, i));
    urls.push_back("s3://bkt/train/" + shard_name(i));
  }
  {
    Cache cold(o);
    cold.get_all(urls);
    CHECK(cold.stats().misses == 20);
  }
  s3.put("train/" + shard_name(3), "new contents");
  // The store, through a proxy, refuses the first request (the listing) as
  // S3 refuses s3:ListBucket: each object is then asked for with a HEAD.
  FaultProxy proxy(s3.port(), {Fault::status_403});
  o.transfer.s3.endpoint = proxy.url("");
  o.transfer.s3.endpoint.pop_back();  // http://127.0.0.1:PORT, without the path's '/'
  Cache warm(o);
  const std::vector<std::string> paths = warm.get_all(urls);
  CHECK(warm.stats().revalidated == 20);
  CHECK(warm.stats().revalidation_requests == 1 + 20);  // the refused listing, then one HEAD each
  CHECK(warm.stats().changed == 1);
  CHECK(warm.stats().misses == 1);
  CHECK(read_file(paths[3]) == "new contents");
  CHECK(read_file(paths[4]) == random_bytes(1004, 4));
  CHECK(proxy.requests() == 1 + 20 + 1);  // and the changed object's GET
}

// the budget (Cache::get_if_room), the objects a new list leaves out unpinned
// and evicted by next use, a failed download thrown by wait() with its URL,
// and the destructor ending the thread.
namespace {

constexpr std::size_t kObject = 100'000;

CacheOptions quick(const std::string& dir, std::uint64_t limit) {
  CacheOptions o = options_in(dir, limit);
  o.revalidate = false;  // as in a worker
  o.transfer.max_retries = 1;
  return o;
}

bool whole(const Cache& cache, const std::string& url) {
  struct stat st{};
  return ::stat(cache.path_of(url).c_str(), &st) == 0 && static_cast<std::size_t>(st.st_size) == kObject;
}

// Polls until `done` or 10 s.
template <typename F>
bool eventually(F done) {
  for (int i = 0; i < 1000; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return done();
}

}  // namespace

TEST_CASE("Prefetcher: needed objects past the budget, ahead ones only within it, by next use") {
  if (!Nginx::why_not().empty()) SKIP_TEST(Nginx::why_not());
  const std::string root = temp_dir("www"), dir = temp_dir("cache");
  std::vector<std::string> urls;
  Nginx http(root);
  for (int i = 0; i < 6; ++i) {
    write_file(root + "/o" + std::to_string(i), random_bytes(kObject, i));
    urls.push_back(http.url("o" + std::to_string(i)));
  }
  const Cache paths(quick(dir, 0));
  Prefetcher fetch(quick(dir, 3 * kObject), urls, std::vector<std::uint64_t>(urls.size(), kObject));

  // 0 needed, then 1..5 ahead: 0, 1, 2 fit the budget of three objects, 3 does not.
  fetch.want({0, 1, 2, 3, 4, 5}, 1);
  fetch.wait(0);
  CHECK(read_file(paths.path_of(urls[0])) == random_bytes(kObject, 0));
  REQUIRE(eventually([&] { return fetch.ready(2); }));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  CHECK(fetch.ready(1));
  CHECK_FALSE(fetch.ready(3));
  CHECK_FALSE(whole(paths, urls[3]));

  // 0 is done with; 3 is needed now: it takes 0's room (never used again), and
  // 1 and 2 stay.
  fetch.want({3, 1, 2, 4, 5}, 1);
  fetch.wait(3);
  CHECK_FALSE(whole(paths, urls[0]));
  CHECK(whole(paths, urls[1]));
  CHECK(whole(paths, urls[2]));
  CHECK(fetch.stats().evictions == 1);

  // 4 needed while 1, 2, 3 hold the budget: 2 is used last, so it goes.
  fetch.want({4, 1, 3, 2}, 1);
  fetch.wait(4);
  CHECK_FALSE(whole(paths, urls[2]));
  CHECK(whole(paths, urls[1]));
  CHECK(whole(paths, urls[3]));
  CHECK(http.requests("GET", "/o2") == 1);
  CHECK(http.requests("GET", "/o5") == 0);  // never fitted ahead
}

TEST_CASE("Prefetcher: without a budget, objects ahead go several at once, each once") {
  if (!Nginx::why_not().empty()) SKIP_TEST(Nginx::why_not());
  const std::string root = temp_dir("www"), dir = temp_dir("cache");
  std::vector<std::string> urls;
  Nginx http(root);
  for (int i = 0; i < 9; ++i) {
    write_file(root + "/o" + std::to_string(i), random_bytes(kObject, i));
    urls.push_back(http.url("o" + std::to_string(i)));
  }
  Prefetcher fetch(quick(dir, 0), urls, std::vector<std::uint64_t>(urls.size(), kObject));
  fetch.want({0, 1, 2, 3, 4, 5, 6, 7, 8}, 1);
  fetch.wait(0);
  REQUIRE(eventually([&] {
    for (std::uint32_t k = 0; k < 9; ++k)
      if (!fetch.ready(k)) return false;
    return true;
  }));
  // A download of the lane's group is reported once the whole group ends,
  // which can be after the first thread found it whole and made it ready.
  std::vector<DownloadSpan> spans;
  REQUIRE(eventually([&] {
    for (DownloadSpan& s : fetch.take_downloads()) spans.push_back(std::move(s));
    return spans.size() >= 9;
  }));
  CHECK(spans.size() == 9);
  // Some went together: one began before another was published.
  bool overlap = false;
  for (const DownloadSpan& a : spans)
    for (const DownloadSpan& b : spans)
      if (&a != &b && a.start_ns < b.end_ns && b.start_ns < a.end_ns) overlap = true;
  CHECK(overlap);
  for (int i = 0; i < 9; ++i) CHECK(http.requests("GET", "/o" + std::to_string(i)) == 1);
}

TEST_CASE("Prefetcher: a download that fails is thrown by wait() with its URL, and the destructor returns") {
  if (!Nginx::why_not().empty()) SKIP_TEST(Nginx::why_not());
  const std::string root = temp_dir("www"), dir = temp_dir("cache");
  Nginx http(root);
  write_file(root + "/there", random_bytes(kObject, 1));
  const std::vector<std::string> urls = {http.url("there"), http.url("missing")};
  {
    Prefetcher fetch(quick(dir, 0), urls, {kObject, kObject});
    fetch.want({0, 1}, 2);
    fetch.wait(0);
    CHECK_THROWS_WITH(fetch.wait(1), Catch::Contains(http.url("missing")) && Catch::Contains("404"));
  }
  {  // a size other than the index's is refused
    Prefetcher fetch(quick(temp_dir("cache"), 0), {http.url("there")}, {kObject + 1});
    fetch.want({0}, 1);
    CHECK_THROWS_WITH(fetch.wait(0), Catch::Contains("holds 100000 bytes, its index 100001"));
  }
  {  // the store down: the thread gives up after its retries; the destructor joins it
    http.stop();
    Prefetcher fetch(quick(temp_dir("cache"), 0), {urls[0]}, {kObject});
    fetch.want({0}, 1);
    CHECK_THROWS_WITH(fetch.wait(0), Catch::Contains(urls[0]));
  }
}
