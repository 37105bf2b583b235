// S3 against s3rver on 127.0.0.1: SigV4-signed GETs, ListObjectsV2 with
// pagination, globs and braces, and the store's own errors.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>

#include "servers.h"
#include "skip.h"
#include "sluice/error.h"
#include "sluice/remote/s3_listing.h"
#include "sluice/remote/transfer.h"

using namespace sluice::remote;
using namespace sluice::test;

namespace {

TransferOptions options_for(const S3rver& s3) {
  TransferOptions o;
  o.backoff_ms = 10;
  o.max_retries = 2;
  o.s3.endpoint = s3.endpoint();
  o.s3.path_style = true;
  o.s3.credentials = {.access_key = "S3RVER", .secret_key = "S3RVER", .session_token = "", .source = "test"};
  return o;
}

}  // namespace

TEST_CASE("S3: signed GETs and ranges, read back as boto3 wrote them") {
  if (!S3rver::why_not().empty()) SKIP_TEST(S3rver::why_not());
  S3rver s3(temp_dir("s3"), "bkt");
  const std::string data = random_bytes(200'000, 7);
  s3.put("dir/a b+c.bin", data);
  const TransferOptions o = options_for(s3);

  Response r = fetch({.url = "s3://bkt/dir/a b+c.bin"}, o);
  REQUIRE(r.ok());
  CHECK(r.body == data);
  CHECK(r.object_size == data.size());
  CHECK_FALSE(r.etag.empty());
  r = fetch({.url = "s3://bkt/dir/a b+c.bin", .offset = 100, .length = 1000}, o);
  REQUIRE(r.ok());
  CHECK(r.body == data.substr(100, 1000));
  r = fetch({.url = "s3://bkt/dir/a b+c.bin", .head = true}, o);
  REQUIRE(r.ok());
  CHECK(r.object_size == data.size());
}

TEST_CASE("S3: ListObjectsV2 pages, globs and brace ranges") {
  if (!S3rver::why_not().empty()) SKIP_TEST(S3rver::why_not());
  S3rver s3(temp_dir("s3"), "bkt");
  const std::string local = temp_dir("shards");
  // More than one page: s3rver, like S3, answers at most 1000 keys a page.
  for (int i = 0; i < 1005; ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "train-%06d.tar", i);
    write_file(local + "/" + name, std::to_string(i));
  }
  write_file(local + "/notes.txt", "x");
  s3.upload(local, "train/");
  s3.put("other/train-000000.tar", "y");
  const TransferOptions o = options_for(s3);

  const std::vector<ObjectInfo> all = list_objects("bkt", "train/", o);
  REQUIRE(all.size() == 1006);
  CHECK(all.front().key == "train/notes.txt");
  CHECK(all[1].key == "train/train-000000.tar");
  CHECK(all[1].size == 1);

  const std::vector<std::string> tars = expand_remote("s3://bkt/train/*.tar", o);
  REQUIRE(tars.size() == 1005);
  CHECK(tars.front() == "s3://bkt/train/train-000000.tar");
  CHECK(tars.back() == "s3://bkt/train/train-001004.tar");
  CHECK(expand_remote("s3://bkt/*/train-00000[0-1].tar", o) ==
        std::vector<std::string>{"s3://bkt/other/train-000000.tar", "s3://bkt/train/train-000000.tar",
                                 "s3://bkt/train/train-000001.tar"});
  // "**" spans zero or more parts, as in local globs (sluice.files{ dir = ..., match = ... }).
  s3.put("deep/a/b/x.jpg", "1");
  s3.put("deep/y.jpg", "2");
  s3.put("deep/a/.hidden.jpg", "3");
  s3.put("deep/a/z.png", "4");
  CHECK(expand_remote("s3://bkt/deep/**/*.jpg", o) ==
        std::vector<std::string>{"s3://bkt/deep/a/b/x.jpg", "s3://bkt/deep/y.jpg"});
  CHECK(expand_remote("s3://bkt/deep/**/*", o).size() == 3);
  // Braces make no request.
  CHECK(expand_remote("s3://bkt/train/train-{000000..000003}.tar", o).size() == 4);
  CHECK_THROWS_WITH(expand_remote("s3://bkt/train/*.zip", o), "no object matches s3://bkt/train/*.zip");
  CHECK_THROWS_WITH(expand_remote("http://h/*.tar", o), Catch::Contains("wildcards need a listing"));
}

TEST_CASE("S3: a missing key, an unknown bucket and bad credentials are one clear error each") {
  if (!S3rver::why_not().empty()) SKIP_TEST(S3rver::why_not());
  S3rver s3(temp_dir("s3"), "bkt");
  s3.put("k", "v");
  TransferOptions o = options_for(s3);
  Response r = fetch({.url = "s3://bkt/nope.tar"}, o);
  CHECK(r.status == 404);
  CHECK(r.retries == 0);
  CHECK(r.error == "s3://bkt/nope.tar: HTTP 404 (NoSuchKey: The specified key does not exist.)");
  r = fetch({.url = "s3://nobucket/k"}, o);
  CHECK(r.status == 404);
  CHECK(r.error == "s3://nobucket/k: HTTP 404 (NoSuchBucket: The specified bucket does not exist)");
  CHECK_THROWS_WITH(list_objects("nobucket", "", o),
                    Catch::StartsWith("cannot list s3://nobucket/: s3://nobucket/: HTTP 404 (NoSuchBucket"));
  // s3rver checks the key id (its V4 signature check is not implemented).
  o.s3.credentials.access_key = "NOBODY";
  r = fetch({.url = "s3://bkt/k"}, o);
  CHECK(r.status == 403);
  CHECK(r.retries == 0);
  CHECK(r.error ==
        "s3://bkt/k: HTTP 403 (InvalidAccessKeyId: The AWS Access Key Id you provided does not exist in our records.)");
}

TEST_CASE("S3: signatures match botocore's for keys, ranges, tokens and queries") {
  if (::system("/usr/bin/python3 -c 'import botocore' 2>/dev/null") != 0) SKIP_TEST("python3-boto3 is not installed");
  const int port = free_port();
  const std::string log = temp_dir("sigv4") + "/oracle.log";
  const pid_t pid = ::fork();
  if (pid == 0) {
    const std::string p = std::to_string(port);
    std::freopen(log.c_str(), "w", stdout);
    ::execl("/usr/bin/python3", "python3", SLUICE_REMOTE_TEST_DIR "/sigv4_oracle.py", p.c_str(), "AKTEST",
            "se/cret+key", "eu-west-3", nullptr);
    ::_exit(127);
  }
  for (int i = 0; i < 500; ++i) {  // the oracle serves one connection at a time: close the probe
    const int fd = connect_local(port);
    if (fd >= 0) {
      ::close(fd);
      break;
    }
    ::usleep(10'000);
  }
  TransferOptions o;
  o.max_retries = 0;
  o.s3.endpoint = "http://127.0.0.1:" + std::to_string(port);
  o.s3.path_style = true;
  o.s3.region = "eu-west-3";
  o.s3.credentials = {.access_key = "AKTEST", .secret_key = "se/cret+key", .session_token = "", .source = "test"};
  for (const Request& request : {Request{.url = "s3://bkt/train/x.tar"},
                                 Request{.url = "s3://bkt/a b/c+d=e&f~g.tar", .offset = 10, .length = 5},
                                 Request{.url = "s3://bkt/", .query = "continuation-token=1d%2Fa%2Bb%3D&list-type=2&prefix=train%2F"},
                                 Request{.url = "s3://bkt/k", .head = true}}) {
    const Response r = fetch(request, o);
    INFO(request.url << "?" << request.query << ": " << r.error);
    CHECK(r.ok());
  }
  o.s3.credentials.session_token = "token/with+chars=";
  CHECK(fetch({.url = "s3://bkt/with-token"}, o).ok());
  o.s3.credentials.secret_key = "wrong";
  const Response bad = fetch({.url = "s3://bkt/train/x.tar"}, o);
  CHECK(bad.status == 403);
  CHECK_THAT(bad.error, Catch::Contains("SignatureDoesNotMatch"));
  ::kill(pid, SIGTERM);
  ::waitpid(pid, nullptr, 0);
}
