// The transfer engine against Debian's nginx on 127.0.0.1: whole bodies,
// ranges, several at once over kept-alive connections, and the errors.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>

#include <set>
#include <sstream>

#include "servers.h"
#include "skip.h"
#include "sluice/remote/transfer.h"

using namespace sluice::remote;
using namespace sluice::test;

namespace {

TransferOptions quick() {
  TransferOptions o;
  o.backoff_ms = 10;
  o.max_retries = 2;
  o.stall_timeout_ms = 2000;
  o.s3 = S3Config{};
  return o;
}

}  // namespace

TEST_CASE("Transfer: whole objects, ranges and resumed tails over HTTP") {
  if (!Nginx::why_not().empty()) SKIP_TEST(Nginx::why_not());
  const std::string root = temp_dir("www");
  const std::string data = random_bytes(300'000, 1);
  write_file(root + "/a.bin", data);
  Nginx http(root);

  Response r = fetch({.url = http.url("a.bin")}, quick());
  REQUIRE(r.ok());
  CHECK(r.status == 200);
  CHECK(r.body == data);
  CHECK(r.object_size == data.size());
  CHECK_FALSE(r.etag.empty());

  r = fetch({.url = http.url("a.bin"), .offset = 1000, .length = 5000}, quick());
  REQUIRE(r.ok());
  CHECK(r.status == 206);
  CHECK(r.body == data.substr(1000, 5000));
  CHECK(r.object_size == data.size());

  // To a file, from an offset on: the bytes before it are kept as they are.
  const std::string out = temp_dir("out") + "/a.part";
  write_file(out, data.substr(0, 123'456));
  r = fetch({.url = http.url("a.bin"), .file = out, .offset = 123'456, .if_match = r.etag}, quick());
  REQUIRE(r.ok());
  CHECK(r.bytes == data.size() - 123'456);
  CHECK(read_file(out) == data);
  CHECK(http.requests("GET", "/a.bin") == 3);

  r = fetch({.url = http.url("a.bin"), .head = true}, quick());
  REQUIRE(r.ok());
  CHECK(r.object_size == data.size());
  CHECK(r.body.empty());
}

TEST_CASE("Transfer: many requests in flight reuse kept-alive connections") {
  if (!Nginx::why_not().empty()) SKIP_TEST(Nginx::why_not());
  const std::string root = temp_dir("www");
  for (int i = 0; i < 40; ++i) write_file(root + "/f" + std::to_string(i), random_bytes(20'000 + i, i));
  Nginx http(root);
  uv_loop_t loop;
  uv_loop_init(&loop);
  int done = 0, good = 0;
  {
    TransferOptions o = quick();
    o.max_in_flight = 4;
    TransferEngine engine(&loop, o);
    for (int i = 0; i < 40; ++i)
      engine.submit({.url = http.url("f" + std::to_string(i))}, [&, i](const Response& r) {
        ++done;
        if (r.ok() && r.body == random_bytes(20'000 + i, i)) ++good;
      });
    uv_run(&loop, UV_RUN_DEFAULT);
    CHECK(engine.stats().requests == 40);
    CHECK(engine.stats().bytes >= 40 * 20'000);
  }
  uv_run(&loop, UV_RUN_DEFAULT);
  CHECK(uv_loop_close(&loop) == 0);
  CHECK(done == 40);
  CHECK(good == 40);
  // Each log line ends in CONNECTION CONNECTION_REQUESTS "RANGE": at most 4
  // connections (max_in_flight) carried the 40 requests.
  std::set<std::string> connections;
  for (const std::string& line : http.log()) {
    std::istringstream in(line);
    std::string method, uri, status, bytes, connection;
    in >> method >> uri >> status >> bytes >> connection;
    connections.insert(connection);
  }
  CHECK(connections.size() <= 4);
}

TEST_CASE("Transfer: 404, a refused connection and an unknown host fail with the URL and the reason") {
  if (!Nginx::why_not().empty()) SKIP_TEST(Nginx::why_not());
  const std::string root = temp_dir("www");
  Nginx http(root);
  Response r = fetch({.url = http.url("missing.tar")}, quick());
  CHECK_FALSE(r.ok());
  CHECK(r.status == 404);
  CHECK(r.error == http.url("missing.tar") + ": HTTP 404");
  CHECK(r.retries == 0);
  CHECK(http.requests("GET", "/missing.tar") == 1);

  http.stop();
  r = fetch({.url = http.url("x")}, quick());
  CHECK_FALSE(r.ok());
  CHECK_THAT(r.error, Catch::StartsWith(http.url("x") + ": Couldn't connect to server"));
  CHECK_THAT(r.error, Catch::EndsWith("(gave up after 2 retries)"));
  CHECK(r.retries == 2);

  r = fetch({.url = "http://no-such-host.invalid/x"}, quick());
  CHECK_FALSE(r.ok());
  CHECK_THAT(r.error, Catch::Contains("no-such-host.invalid"));
  CHECK(r.retries == 0);
}

TEST_CASE("Transfer: a store that ignores Range restarts a whole-object read and fails a ranged one") {
  // Python's http.server answers every GET with 200 and the whole file.
  const std::string root = temp_dir("www");
  const std::string data = random_bytes(50'000, 3);
  write_file(root + "/a.bin", data);
  const int port = free_port();
  const pid_t pid = ::fork();
  if (pid == 0) {
    const std::string p = std::to_string(port);
    std::freopen("/dev/null", "w", stderr);
    std::freopen("/dev/null", "w", stdout);
    ::execl("/usr/bin/python3", "python3", "-m", "http.server", p.c_str(), "--bind", "127.0.0.1", "--directory",
            root.c_str(), nullptr);
    ::_exit(127);
  }
  for (int i = 0; i < 500; ++i) {
    const int fd = connect_local(port);
    if (fd >= 0) {
      ::close(fd);
      break;
    }
    ::usleep(10'000);
  }
  const std::string url = "http://127.0.0.1:" + std::to_string(port) + "/a.bin";
  const std::string out = temp_dir("out") + "/a.part";
  write_file(out, "stale bytes of a cut download");
  Response r = fetch({.url = url, .file = out, .offset = 29}, quick());
  CHECK(r.ok());
  CHECK(read_file(out) == data);
  r = fetch({.url = url, .offset = 10, .length = 10}, quick());
  CHECK_FALSE(r.ok());
  CHECK(r.error == url + ": the store ignored Range (200 instead of 206)");
  ::kill(pid, SIGTERM);
  ::waitpid(pid, nullptr, 0);
}
