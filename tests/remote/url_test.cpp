// URLs, brace ranges and where credentials come from.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <optional>
#include <sys/stat.h>

#include "servers.h"
#include "sluice/error.h"
#include "sluice/remote/credentials.h"
#include "sluice/remote/transfer.h"
#include "sluice/remote/url.h"
#include "store_message.h"
#include "xml_text.h"

using namespace sluice::remote;
using sluice::Error;

TEST_CASE("URLs: schemes, buckets, keys and hosts") {
  CHECK(is_remote("s3://b/k"));
  CHECK(is_remote("https://h/p"));
  CHECK(is_remote("http://h/p"));
  CHECK_FALSE(is_remote("/data/x.tar"));
  CHECK_FALSE(is_remote("s3:/b/k"));
  CHECK_FALSE(is_remote("file:///x"));

  const Url s3 = parse_url("s3://bucket/train/a b.tar");
  CHECK(s3.scheme == Scheme::s3);
  CHECK(s3.bucket() == "bucket");
  CHECK(s3.key() == "train/a b.tar");
  CHECK(base_name(s3) == "a b.tar");
  const Url http = parse_url("http://127.0.0.1:8080/x/y.tar?sig=1");
  CHECK(http.scheme == Scheme::http);
  CHECK(http.host == "127.0.0.1:8080");
  CHECK(http.path == "/x/y.tar?sig=1");
  CHECK(base_name(http) == "y.tar");
  CHECK(parse_url("https://h").path == "/");

  CHECK(uri_encode("a b/c~d+e", true) == "a%20b/c~d%2Be");
  CHECK(uri_encode("a b/c", false) == "a%20b%2Fc");

  CHECK_THROWS_WITH(parse_url("s3:///key"), "bad URL 's3:///key': no bucket");
  CHECK_THROWS_WITH(parse_url("ftp://h/x"), "bad URL 'ftp://h/x': expected s3://, https:// or http://");
  CHECK_THROWS_WITH(parse_url("https:///x"), "bad URL 'https:///x': no host");
}

TEST_CASE("URLs: WebDataset brace ranges and alternatives") {
  CHECK(expand_braces("s3://b/x.tar") == std::vector<std::string>{"s3://b/x.tar"});
  CHECK(expand_braces("s3://b/train-{000000..000002}.tar") ==
        std::vector<std::string>{"s3://b/train-000000.tar", "s3://b/train-000001.tar", "s3://b/train-000002.tar"});
  CHECK(expand_braces("t{8..11}") == std::vector<std::string>{"t8", "t9", "t10", "t11"});
  CHECK(expand_braces("t{08..11}") == std::vector<std::string>{"t08", "t09", "t10", "t11"});
  CHECK(expand_braces("{a,b}-{0..1}") == std::vector<std::string>{"a-0", "a-1", "b-0", "b-1"});
  CHECK(expand_braces("s3://b/train-{000000..000127}.tar").size() == 128);
  CHECK(expand_braces("s3://b/train-{000000..000127}.tar").back() == "s3://b/train-000127.tar");
  CHECK_THROWS_WITH(expand_braces("x{1..2"), "unbalanced '{' in 'x{1..2'");
  CHECK_THROWS_WITH(expand_braces("x}1"), "unbalanced '}' in 'x}1'");
  CHECK_THROWS_WITH(expand_braces("x{3..1}"), "bad brace range {3..1} in 'x{3..1}': it runs backwards");
  CHECK_THROWS_WITH(expand_braces("x{a..b}"),
                    "bad brace range {a..b} in 'x{a..b}': expected {A..B} with decimal A and B");
  CHECK_THROWS_WITH(expand_braces("x{0..99999999999}"), Catch::Contains("more than 10000000 names"));
  CHECK_THROWS_WITH(expand_braces("{0..9999}{0..9999}"), Catch::Contains("more than 10000000 names"));
}

namespace {

// Sets or clears environment variables for one test case; restores after.
struct Env {
  std::vector<std::pair<std::string, std::optional<std::string>>> saved;
  void set(const char* name, const char* value) {
    const char* old = std::getenv(name);
    saved.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
    if (value) ::setenv(name, value, 1);
    else ::unsetenv(name);
  }
  ~Env() {
    for (auto it = saved.rbegin(); it != saved.rend(); ++it) {
      if (it->second) ::setenv(it->first.c_str(), it->second->c_str(), 1);
      else ::unsetenv(it->first.c_str());
    }
  }
};

void clear_aws(Env& env, const std::string& home) {
  for (const char* n : {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
                        "AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE", "AWS_REGION", "AWS_DEFAULT_REGION",
                        "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_CA_BUNDLE", "CURL_CA_BUNDLE", "SSL_CERT_FILE",
                        "SSL_CERT_DIR"})
    env.set(n, nullptr);
  env.set("HOME", home.c_str());
}

}  // namespace

TEST_CASE("Credentials: environment, then the profile's file, else anonymous") {
  const std::string home = sluice::test::temp_dir("home");
  Env env;
  clear_aws(env, home);
  {
    const S3Config c = s3_config_from_environment();
    CHECK(c.credentials.anonymous());
    CHECK(c.region == "us-east-1");
    CHECK(c.endpoint.empty());
    CHECK_FALSE(c.path_style);
  }
  ::mkdir((home + "/.aws").c_str(), 0755);
  sluice::test::write_file(home + "/.aws/credentials",
                           "[default]\naws_access_key_id = AKDEFAULT\naws_secret_access_key = sd\n\n"
                           "# a comment\n[work]\naws_access_key_id=AKWORK\naws_secret_access_key=sw\n"
                           "aws_session_token = tok\n");
  sluice::test::write_file(home + "/.aws/config", "[default]\nregion = eu-west-1\n[profile work]\nregion = ap-south-1\n"
                                                 "sts =\n  endpoint_url = http://127.0.0.1:9200\n"
                                                 "endpoint_url = http://127.0.0.1:9100/\nca_bundle = /etc/work-ca.pem\n");
  {
    const S3Config c = s3_config_from_environment();
    CHECK(c.credentials.access_key == "AKDEFAULT");
    CHECK(c.credentials.secret_key == "sd");
    CHECK(c.region == "eu-west-1");
  }
  env.set("AWS_PROFILE", "work");
  {
    const S3Config c = s3_config_from_environment();
    CHECK(c.credentials.access_key == "AKWORK");
    CHECK(c.credentials.session_token == "tok");
    CHECK(c.region == "ap-south-1");
    CHECK(c.endpoint == "http://127.0.0.1:9100");  // the profile's endpoint_url, as the AWS CLI takes it
    CHECK(c.path_style);
    CHECK(c.ca_bundle == "/etc/work-ca.pem");
  }
  env.set("AWS_ACCESS_KEY_ID", "AKENV");
  env.set("AWS_SECRET_ACCESS_KEY", "se");
  env.set("AWS_REGION", "us-west-2");
  env.set("AWS_ENDPOINT_URL", "http://127.0.0.1:9000/");
  {
    const S3Config c = s3_config_from_environment();
    CHECK(c.credentials.access_key == "AKENV");
    CHECK(c.credentials.session_token.empty());
    CHECK(c.region == "us-west-2");
    CHECK(c.endpoint == "http://127.0.0.1:9000");
    CHECK(c.path_style);
    CHECK(http_url("s3://bkt/a/b c.tar", c) == "http://127.0.0.1:9000/bkt/a/b%20c.tar");
  }
  // The CAs https trusts: AWS_CA_BUNDLE before the profile's (s3://);
  // CURL_CA_BUNDLE before SSL_CERT_FILE (any https); none: the system's.
  CHECK(tls_config_from_environment().ca_file.empty());
  CHECK(tls_config_from_environment().ca_dir.empty());
  env.set("AWS_CA_BUNDLE", "/etc/env-ca.pem");
  env.set("SSL_CERT_FILE", "/etc/ssl-ca.pem");
  env.set("SSL_CERT_DIR", "/etc/cas");
  CHECK(s3_config_from_environment().ca_bundle == "/etc/env-ca.pem");
  CHECK(tls_config_from_environment().ca_file == "/etc/ssl-ca.pem");
  CHECK(tls_config_from_environment().ca_dir == "/etc/cas");
  env.set("CURL_CA_BUNDLE", "/etc/curl-ca.pem");
  CHECK(tls_config_from_environment().ca_file == "/etc/curl-ca.pem");
  // A profile neither file holds stops every s3:// request, naming it, as
  // the AWS tools stop ("default" may be absent: it is the fallback).
  env.set("AWS_PROFILE", "nosuch");
  {
    const S3Config c = s3_config_from_environment();
    CHECK_THAT(c.problem, Catch::Matchers::Contains("the profile 'nosuch' (AWS_PROFILE) is in neither " + home +
                                                    "/.aws/credentials nor " + home + "/.aws/config"));
    CHECK_THROWS_WITH(http_url("s3://bkt/x.tar", c), Catch::Matchers::StartsWith("s3://bkt/x.tar: the profile 'nosuch'"));
    CHECK(http_url("http://h/x.tar", c) == "http://h/x.tar");
  }
  env.set("AWS_PROFILE", "default");
  CHECK(s3_config_from_environment().problem.empty());
  env.set("AWS_PROFILE", "work");  // only in the config file: enough
  ::unlink((home + "/.aws/credentials").c_str());
  CHECK(s3_config_from_environment().problem.empty());
  S3Config aws;
  aws.region = "eu-central-1";
  CHECK(http_url("s3://bkt/k/x.tar", aws) == "https://bkt.s3.eu-central-1.amazonaws.com/k/x.tar");
  CHECK(http_url("https://h/x.tar", aws) == "https://h/x.tar");
}

TEST_CASE("Store messages: S3 error documents and short text") {
  CHECK(store_message("<?xml version=\"1.0\"?><Error><Code>NoSuchKey</Code><Message>The key &amp; all</Message></Error>") ==
        " (NoSuchKey: The key & all)");
  CHECK(store_message("Slow Down\n") == " (Slow Down)");
  CHECK(store_message("<html><body>503</body></html>").empty());
  CHECK(detail::xml_decode("a&lt;b&#x41;&#66;&quot;") == "a<bAB\"");
  CHECK(detail::xml_elements("<K>1</K><K>2</K>", "K").size() == 2);
}
