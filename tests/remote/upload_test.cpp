// Uploads against s3rver on 127.0.0.1: one PUT below the multipart threshold,
// a multipart upload above it, both read back whole with signed GETs and with
// boto3 (an independent client); 503s and resets met by the proxy are
// retried with the whole body sent again; the store's refusals are named.
#include <catch2/catch.hpp>

#include <cstdio>

#include "fault_proxy.h"
#include "servers.h"
#include "skip.h"
#include "sluice/error.h"
#include "sluice/remote/upload.h"

using namespace sluice::remote;
using namespace sluice::test;

namespace {

UploadOptions upload_options(const std::string& endpoint, const std::string& key = "S3RVER") {
  UploadOptions o;
  o.transfer.backoff_ms = 10;
  o.transfer.max_retries = 4;
  o.transfer.s3.endpoint = endpoint;
  o.transfer.s3.path_style = true;
  o.transfer.s3.credentials = {.access_key = key, .secret_key = "S3RVER", .session_token = "", .source = "test"};
  o.multipart_threshold = 1 << 20;
  o.part_size = 1;  // raised to S3's 5 MiB
  return o;
}

// The object's bytes as boto3 reads them.
std::string boto3_get(const S3rver& s3, const std::string& bucket, const std::string& key) {
  const std::string dir = temp_dir("get");
  write_file(dir + "/get.py",
             "import boto3, sys\n"
             "s3 = boto3.client('s3', endpoint_url=sys.argv[1], aws_access_key_id='S3RVER',\n"
             "                  aws_secret_access_key='S3RVER', region_name='us-east-1')\n"
             "open(sys.argv[4], 'wb').write(s3.get_object(Bucket=sys.argv[2], Key=sys.argv[3])['Body'].read())\n");
  const std::string command = "/usr/bin/python3 '" + dir + "/get.py' " + s3.endpoint() + " '" + bucket + "' '" +
                              key + "' '" + dir + "/body' > '" + dir + "/log' 2>&1";
  if (std::system(command.c_str()) != 0) return "boto3 failed: " + read_file(dir + "/log");
  return read_file(dir + "/body");
}

}  // namespace

TEST_CASE("Upload: one PUT below the threshold, a multipart upload above it, both read back whole") {
  if (!S3rver::why_not().empty()) SKIP_TEST(S3rver::why_not());
  S3rver s3(temp_dir("s3"), "bkt");
  const std::string dir = temp_dir("up");
  const std::string small = random_bytes(1000, 1), big = random_bytes((12u << 20) + 3, 2);
  write_file(dir + "/small", small);
  write_file(dir + "/big", big);
  const UploadOptions o = upload_options(s3.endpoint());
  Uploader up(o);
  up.put_file(dir + "/small", "s3://bkt/w/small.bin");
  CHECK(up.multipart_uploads() == 0);
  up.put_file(dir + "/big", "s3://bkt/w/big.bin");
  CHECK(up.multipart_uploads() == 1);  // three parts: 5 MiB, 5 MiB, 2 MiB + 3
  up.put_text("{\"a\": 1}", "s3://bkt/w/m.json");

  CHECK(fetch({.url = "s3://bkt/w/small.bin"}, o.transfer).body == small);
  CHECK(fetch({.url = "s3://bkt/w/big.bin"}, o.transfer).body == big);
  CHECK(boto3_get(s3, "bkt", "w/big.bin") == big);
  CHECK(up.get_text("s3://bkt/w/m.json") == std::optional<std::string>("{\"a\": 1}"));
  CHECK(up.object_size("s3://bkt/w/big.bin") == std::optional<std::uint64_t>(big.size()));
  CHECK(up.object_size("s3://bkt/w/none.bin") == std::nullopt);
  CHECK(up.get_text("s3://bkt/w/none.json") == std::nullopt);
  // Written again with other bytes: the new object replaces the old whole.
  const std::string other = random_bytes((6u << 20) + 1, 3);
  write_file(dir + "/big", other);
  up.put_file(dir + "/big", "s3://bkt/w/big.bin");
  CHECK(fetch({.url = "s3://bkt/w/big.bin"}, o.transfer).body == other);
}

TEST_CASE("Upload: 503s and resets are retried, each sending its whole body again") {
  if (!S3rver::why_not().empty()) SKIP_TEST(S3rver::why_not());
  S3rver s3(temp_dir("s3"), "bkt");
  const std::string dir = temp_dir("up");
  const std::string small = random_bytes(300'000, 4), big = random_bytes((11u << 20) + 7, 5);
  write_file(dir + "/small", small);
  write_file(dir + "/big", big);
  const int port = std::stoi(s3.endpoint().substr(s3.endpoint().rfind(':') + 1));
  {
    FaultProxy proxy(port, {Fault::status_503, Fault::reset, Fault::status_503});
    std::string endpoint = proxy.url("");
    endpoint.pop_back();
    Uploader up(upload_options(endpoint));
    up.put_file(dir + "/small", "s3://bkt/r/small.bin");
    CHECK(proxy.requests() == 4);
  }
  {
    // CreateMultipartUpload meets a 503, then parts and the completion resets and 503s.
    FaultProxy proxy(port, {Fault::status_503, Fault::pass, Fault::reset, Fault::status_503, Fault::reset,
                            Fault::pass, Fault::pass, Fault::status_503});
    std::string endpoint = proxy.url("");
    endpoint.pop_back();
    Uploader up(upload_options(endpoint));
    up.put_file(dir + "/big", "s3://bkt/r/big.bin");
    CHECK(up.multipart_uploads() == 1);
  }
  const TransferOptions direct = upload_options(s3.endpoint()).transfer;
  CHECK(fetch({.url = "s3://bkt/r/small.bin"}, direct).body == small);
  CHECK(fetch({.url = "s3://bkt/r/big.bin"}, direct).body == big);
}

TEST_CASE("Upload: to a web server taking PUT, one PUT per object, read back whole, absent is 404") {
  if (!Nginx::why_not().empty()) SKIP_TEST(Nginx::why_not());
  const std::string root = temp_dir("www"), dir = temp_dir("up");
  Nginx nginx(root);
  const std::string big = random_bytes(3u << 20, 8);
  write_file(dir + "/big", big);
  UploadOptions o;
  o.multipart_threshold = 1 << 20;  // S3 would take the multipart path; a web server never does
  Uploader up(o);
  CHECK_FALSE(up.object_size(nginx.url("a/big.bin")).has_value());
  CHECK_FALSE(up.get_text(nginx.url("a/m.json")).has_value());
  up.put_file(dir + "/big", nginx.url("a/big.bin"));
  up.put_text("{\"x\": 1}", nginx.url("a/m.json"));
  CHECK(up.multipart_uploads() == 0);
  CHECK(read_file(root + "/a/big.bin") == big);
  CHECK(up.object_size(nginx.url("a/big.bin")) == big.size());
  CHECK(up.get_text(nginx.url("a/m.json")) == "{\"x\": 1}");
  CHECK(nginx.requests("PUT", "/a/big.bin") == 1);
}

TEST_CASE("Upload: an unknown bucket, a refused key and an unreachable server are clear errors") {
  if (!S3rver::why_not().empty()) SKIP_TEST(S3rver::why_not());
  S3rver s3(temp_dir("s3"), "bkt");
  const std::string dir = temp_dir("up");
  write_file(dir + "/small", "abc");
  write_file(dir + "/big", random_bytes(2u << 20, 6));
  Uploader up(upload_options(s3.endpoint()));
  CHECK_THROWS_WITH(up.put_file(dir + "/small", "s3://nobucket/x"),
                    Catch::Contains("s3://nobucket/x: HTTP 404 (NoSuchBucket: The specified bucket does not exist)"));
  CHECK_THROWS_WITH(up.put_file(dir + "/big", "s3://nobucket/y"),
                    Catch::Contains("cannot start a multipart upload: s3://nobucket/y: HTTP 404 (NoSuchBucket"));
  CHECK_THROWS_WITH(up.object_size("s3://nobucket/x"), Catch::Contains("HTTP 404 (NoSuchBucket"));
  CHECK_THROWS_WITH(up.put_file(dir + "/small", "http://127.0.0.1:1/x"), Catch::Contains("http://127.0.0.1:1/x"));
  CHECK_THROWS_WITH(up.put_file(dir + "/none", "s3://bkt/x"), Catch::Contains("cannot upload " + dir + "/none"));
  Uploader refused(upload_options(s3.endpoint(), "NOBODY"));
  CHECK_THROWS_WITH(refused.put_file(dir + "/small", "s3://bkt/x"),
                    Catch::Contains("s3://bkt/x: HTTP 403 (InvalidAccessKeyId: "));
}

TEST_CASE("Upload: a part that keeps failing aborts the multipart upload and says so") {
  if (!S3rver::why_not().empty()) SKIP_TEST(S3rver::why_not());
  S3rver s3(temp_dir("s3"), "bkt");
  const std::string dir = temp_dir("up");
  write_file(dir + "/big", random_bytes(2u << 20, 8));  // one part
  const int port = std::stoi(s3.endpoint().substr(s3.endpoint().rfind(':') + 1));
  FaultProxy proxy(port, {Fault::pass, Fault::status_503, Fault::status_503, Fault::status_503});
  std::string endpoint = proxy.url("");
  endpoint.pop_back();
  UploadOptions o = upload_options(endpoint);
  o.transfer.max_retries = 2;
  Uploader up(o);
  // s3rver does not implement AbortMultipartUpload (405): the message says the parts may stay.
  CHECK_THROWS_WITH(up.put_file(dir + "/big", "s3://bkt/x"),
                    // curl meets the 503 while it sends the part: a send error or the 503, either retried
                    Catch::Contains("multipart upload of s3://bkt/x failed: part 1: s3://bkt/x: ") &&
                        Catch::Contains("(gave up after 2 retries); aborting") &&
                        Catch::Contains("aborting it failed too (s3://bkt/x: HTTP 405"));
  CHECK(proxy.requests() == 5);  // create, three tries of the part, the abort
  CHECK_FALSE(up.object_size("s3://bkt/x"));
}
