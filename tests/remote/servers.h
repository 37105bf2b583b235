// Test support: real servers on 127.0.0.1, started and stopped by the tests.
//
//   Nginx http(root);              // Debian's nginx serving `root`, with Range
//   http.url("a/x.tar")            // "http://127.0.0.1:PORT/a/x.tar"
//   http.requests("GET", "/a/x.tar")  // counted in its access log
//
//   S3rver s3(dir, "bucket");      // s3rver (npm) on a directory
//   s3.upload(local_dir, "train/"); // each file as train/NAME, by boto3
//
//   Nginx https(root, "", true);   // the same over TLS: https://, its own CA
//   https.ca_file()                // the PEM file that CA is (a self-signed certificate)
//
// Each has a usable() check; tests SKIP_TEST with why_not() when the server
// cannot run here. Servers stop when destroyed (stop()/start() in between
// keep the same port and data).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace sluice::test {

// A fresh directory under $TMPDIR, removed when the test case ends with no
// failure, with the files named DIR.* beside it (kept for a look when it
// failed: its path is printed).
std::string temp_dir(const std::string& tag);
int free_port();
// A connected TCP socket to 127.0.0.1:port, or -1.
int connect_local(int port);
void write_file(const std::string& path, const std::string& bytes);
std::string read_file(const std::string& path);
// `n` bytes that differ from one seed to another.
std::string random_bytes(std::size_t n, std::uint64_t seed);

// `sh -c COMMAND` in `dir`: its exit status and what it printed (stdout and
// stderr together, kept in DIR/cli.log).
struct Run {
  int status = -1;
  std::string out;
};
Run sh(const std::string& dir, const std::string& command);
// The `sluice` command line of this build; "" when it is not built (then
// tests SKIP_TEST(kNoCli)).
std::string cli();
extern const char* const kNoCli;

// A self-signed certificate for 127.0.0.1 (its own CA), made by openssl(1)
// in `dir`: DIR/key.pem and DIR/cert.pem. Throws when openssl fails.
void make_tls_certificate(const std::string& dir);
std::string tls_why_not();  // "" when openssl(1) is there

class Nginx {
 public:
  // limit_rate: nginx's per-connection rate ("200k"), "" for none. tls:
  // https:// with a certificate of its own (make_tls_certificate). ranges:
  // false answers a Range request with the whole file (200), as servers
  // without ranges do (max_ranges 0).
  explicit Nginx(std::string root, const std::string& limit_rate = "", bool tls = false, bool ranges = true);
  ~Nginx();
  static std::string why_not();  // "" when nginx is installed
  void start();
  void stop();
  int port() const { return port_; }
  std::string url(const std::string& path) const;
  std::string ca_file() const { return dir_ + "/cert.pem"; }  // with tls
  // Access-log lines: "METHOD URI STATUS BYTES CONNECTION CONNECTION_REQUESTS RANGE".
  std::vector<std::string> log() const;
  // Requests of `uri` by `method`; with `status`, only those answered so
  // (200: whole objects; 206: ranges).
  int requests(const std::string& method, const std::string& uri, int status = 0) const;

 private:
  std::string root_, dir_;
  int port_ = 0;
  bool tls_ = false;
  pid_t pid_ = -1;
};

class S3rver {
 public:
  // tls: https:// with a certificate of its own (make_tls_certificate, in DIR.tls).
  S3rver(std::string dir, std::string bucket, bool tls = false);
  ~S3rver();
  static std::string why_not();  // "" when node, s3rver and boto3 are there
  void start();
  void stop();
  std::string endpoint() const;  // http://127.0.0.1:PORT (https:// with tls)
  std::string ca_file() const { return dir_ + ".tls/cert.pem"; }  // with tls
  int port() const { return port_; }
  // Uploads every file of `dir` as PREFIX + its name (boto3, /usr/bin/python3).
  void upload(const std::string& dir, const std::string& prefix) const;
  void put(const std::string& key, const std::string& bytes) const;

 private:
  std::string dir_, bucket_;
  int port_ = 0;
  bool tls_ = false;
  pid_t pid_ = -1;
};

// "AWS_ENDPOINT_URL=... AWS_ACCESS_KEY_ID=... " for a shell command to s3rver.
std::string s3_env(const S3rver& s3);

// In `work`: runs local.lua, then http.lua and s3.lua (`s3env` before it)
// with 1 and 2 workers, each into a cold cache of its own (cache-http1,
// cache-s32, ...), and checks that each one's run record equals local.lua's
// (sluice verify) and that the http runs print `said` (when not empty).
void check_same_records(const std::string& work, const std::string& s3env, const std::string& said = "");

// In `work`: runs http.lua as ranks 0 and 1 of 2 at once, sharing the cache
// `cache`, then local.lua as each rank, and checks each rank's records agree.
void check_two_ranks(const std::string& work);

// Sets AWS_ENDPOINT_URL, the s3rver credentials and a region for this
// process (and its children) while alive; restores them after.
class S3Environment {
 public:
  explicit S3Environment(const std::string& endpoint, const std::string& key = "S3RVER",
                         const std::string& secret = "S3RVER");
  ~S3Environment();

 private:
  std::vector<std::pair<std::string, std::string>> saved_;
  std::vector<std::string> unset_;
};

}  // namespace sluice::test
