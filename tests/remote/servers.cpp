#include "servers.h"

#define CATCH_CONFIG_EXTERNAL_INTERFACES  // Catch::TestEventListenerBase, for the listener below
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace sluice::test {
namespace {

bool file_exists(const std::string& p) {
  struct stat st{};
  return ::stat(p.c_str(), &st) == 0;
}

bool port_open(int port) {
  const int fd = connect_local(port);
  if (fd >= 0) ::close(fd);
  return fd >= 0;
}

pid_t spawn(const std::vector<std::string>& argv, const std::string& log) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
    }
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
    ::_exit(127);
  }
  return pid;
}

void wait_ready(pid_t pid, int port, const std::string& what, const std::string& log) {
  for (int i = 0; i < 1000; ++i) {
    if (port_open(port)) return;
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid)
      throw std::runtime_error(what + " exited at start; see " + log + ":\n" + read_file(log));
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  throw std::runtime_error(what + " did not listen on port " + std::to_string(port) + " within 10 s");
}

void terminate(pid_t& pid) {
  if (pid <= 0) return;
  ::kill(pid, SIGTERM);
  for (int i = 0; i < 500; ++i) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      pid = -1;
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  pid = -1;
}

std::string s3rver_js() { return std::string(SLUICE_NPM_PREFIX) + "/node_modules/s3rver/bin/s3rver.js"; }

int run(const std::string& command) {
  const int rc = std::system(command.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

}  // namespace

Run sh(const std::string& dir, const std::string& command) {
  const std::string log = dir + "/cli.log";
  const int rc = std::system(("cd '" + dir + "' && (" + command + ") > '" + log + "' 2>&1").c_str());
  return {WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, read_file(log)};
}

std::string cli() { return SLUICE_CLI; }
const char* const kNoCli = "the sluice command line is not part of this build";

std::string s3_env(const S3rver& s3) {
  return "AWS_ENDPOINT_URL=" + s3.endpoint() + " AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER AWS_REGION=us-east-1 ";
}

void check_same_records(const std::string& work, const std::string& s3env, const std::string& said) {
  Run r = sh(work, cli() + " run local.lua --quiet --record local.jsonl");
  INFO(r.out);
  REQUIRE(r.status == 0);
  for (const std::string workers : {"1", "2"}) {
    const std::string w = " --workers " + workers;
    r = sh(work, "SLUICE_CACHE_DIR=cache-http" + workers + " " + cli() + " run http.lua" + w + " --record http" +
                     workers + ".jsonl");
    INFO(r.out);
    REQUIRE(r.status == 0);
    if (!said.empty()) CHECK_THAT(r.out, Catch::Contains(said));
    r = sh(work, s3env + "SLUICE_CACHE_DIR=cache-s3" + workers + " " + cli() + " run s3.lua --quiet" + w +
                     " --record s3" + workers + ".jsonl");
    INFO(r.out);
    REQUIRE(r.status == 0);
    for (const std::string other : {"http", "s3"}) {
      r = sh(work, cli() + " verify local.jsonl " + other + workers + ".jsonl");
      INFO(other << workers << ": " << r.out);
      CHECK(r.status == 0);
    }
  }
}

void check_two_ranks(const std::string& work) {
  const std::string rank = "WORLD_SIZE=2 SLUICE_CACHE_DIR=cache ";
  Run r = sh(work, rank + "RANK=0 " + cli() + " run http.lua --quiet --record http_0.jsonl & a=$!; " + rank +
                       "RANK=1 " + cli() + " run http.lua --quiet --record http_1.jsonl; b=$?; wait $a; " +
                       "exit $(( $? | b ))");
  INFO(r.out);
  REQUIRE(r.status == 0);
  for (const std::string k : {"0", "1"}) {
    r = sh(work, "WORLD_SIZE=2 RANK=" + k + " " + cli() + " run local.lua --quiet --record local_" + k + ".jsonl");
    REQUIRE(r.status == 0);
    r = sh(work, cli() + " verify local_" + k + ".jsonl http_" + k + ".jsonl");
    INFO(r.out);
    CHECK(r.status == 0);
  }
}

namespace {

// The test case's temporary directories, for the listener below. Its servers
// (RAII in the test's scope) have stopped by the time it runs. Only the
// test's own process runs it: children exec or _exit.
std::vector<std::string>& temp_dirs() {
  static std::vector<std::string> dirs;
  return dirs;
}

struct RemoveTempDirs : Catch::TestEventListenerBase {
  using TestEventListenerBase::TestEventListenerBase;
  void testCaseEnded(const Catch::TestCaseStats& stats) override {
    for (const std::string& dir : temp_dirs()) {
      if (stats.totals.assertions.failed > 0) {
        std::fprintf(stderr, "kept for a look: %s\n", dir.c_str());
        continue;
      }
      // With what servers keep beside it (S3rver: DIR.log, DIR.tls, ...).
      namespace fs = std::filesystem;
      const fs::path path(dir);
      const std::string beside = path.filename().string() + ".";
      std::error_code ignored;
      for (const fs::directory_entry& e : fs::directory_iterator(path.parent_path(), ignored))
        if (e.path().filename().string().starts_with(beside)) fs::remove_all(e.path(), ignored);
      fs::remove_all(path, ignored);
    }
    temp_dirs().clear();
  }
};
CATCH_REGISTER_LISTENER(RemoveTempDirs)

}  // namespace

std::string temp_dir(const std::string& tag) {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/sluice-" + tag + "-XXXXXX";
  if (!::mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp " + pattern);
  temp_dirs().push_back(pattern);
  return pattern;
}

int connect_local(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path);
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string random_bytes(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string out(n, '\0');
  for (char& c : out) c = static_cast<char>(rng());
  return out;
}

// ---- nginx

std::string Nginx::why_not() {
  return file_exists("/usr/sbin/nginx") ? "" : "nginx is not installed (tools/install-deps.sh installs nginx-light)";
}

std::string tls_why_not() {
  return file_exists("/usr/bin/openssl") ? "" : "openssl(1) is not installed (Debian's ca-certificates brings it)";
}

void make_tls_certificate(const std::string& dir) {
  ::mkdir(dir.c_str(), 0755);
  const std::string command = "/usr/bin/openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
                              "-keyout '" + dir + "/key.pem' -out '" + dir + "/cert.pem' -days 2 -subj /CN=127.0.0.1 "
                              "-addext subjectAltName=IP:127.0.0.1 > '" + dir + "/openssl.log' 2>&1";
  if (run(command) != 0) throw std::runtime_error("openssl failed: " + read_file(dir + "/openssl.log"));
}

Nginx::Nginx(std::string root, const std::string& limit_rate, bool tls, bool ranges)
    : root_(std::move(root)), dir_(temp_dir("nginx")), port_(free_port()), tls_(tls) {
  ::mkdir((dir_ + "/tmp").c_str(), 0755);
  if (tls_) make_tls_certificate(dir_);
  std::ofstream conf(dir_ + "/nginx.conf");
  conf << "daemon off;\nmaster_process off;\nworker_processes 1;\npid " << dir_ << "/nginx.pid;\n"
       << "error_log " << dir_ << "/error.log;\nevents { worker_connections 256; }\n"
       << "http {\n"
       << "  log_format counts '$request_method $uri $status $body_bytes_sent $connection $connection_requests "
          "\"$http_range\"';\n"
       << "  access_log " << dir_ << "/access.log counts;\n"
       << "  client_body_temp_path " << dir_ << "/tmp;\n  proxy_temp_path " << dir_ << "/tmp;\n"
       << "  fastcgi_temp_path " << dir_ << "/tmp;\n  uwsgi_temp_path " << dir_ << "/tmp;\n"
       << "  scgi_temp_path " << dir_ << "/tmp;\n"
       << "  keepalive_requests 10000;\n"
       << (limit_rate.empty() ? "" : "  limit_rate " + limit_rate + ";\n")
       << (ranges ? "" : "  max_ranges 0;\n")
       << "  server {\n    listen 127.0.0.1:" << port_ << (tls_ ? " ssl" : "") << ";\n    root " << root_ << ";\n"
       << (tls_ ? "    ssl_certificate " + dir_ + "/cert.pem;\n    ssl_certificate_key " + dir_ + "/key.pem;\n" : "")
       // PUT for writers (nginx's DAV module: a temporary file renamed into place).
       << "    location / { dav_methods PUT DELETE; create_full_put_path on; client_max_body_size 0; }\n  }\n}\n";
  conf.close();
  start();
}

Nginx::~Nginx() { stop(); }

void Nginx::start() {
  if (pid_ > 0) return;
  pid_ = spawn({"/usr/sbin/nginx", "-e", dir_ + "/error.log", "-p", dir_, "-c", dir_ + "/nginx.conf"},
               dir_ + "/stdout.log");
  wait_ready(pid_, port_, "nginx", dir_ + "/error.log");
}

void Nginx::stop() { terminate(pid_); }

std::string Nginx::url(const std::string& path) const {
  return (tls_ ? "https" : "http") + std::string("://127.0.0.1:") + std::to_string(port_) + "/" + path;
}

std::vector<std::string> Nginx::log() const {
  // nginx writes a request's line after sending the response, so a client
  // may be done before the line is: wait until the log has been still for 50 ms.
  std::string last = read_file(dir_ + "/access.log");
  for (int i = 0; i < 40; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    std::string now = read_file(dir_ + "/access.log");
    if (now == last) break;
    last = std::move(now);
  }
  std::vector<std::string> lines;
  std::ifstream in(dir_ + "/access.log");
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

int Nginx::requests(const std::string& method, const std::string& uri, int status) const {
  int n = 0;
  const std::string prefix = method + " " + uri + " " + (status ? std::to_string(status) + " " : "");
  for (const std::string& line : log())
    if (line.rfind(prefix, 0) == 0) ++n;
  return n;
}

// ---- s3rver

std::string S3rver::why_not() {
  if (!file_exists("/usr/bin/node")) return "node is not installed (tools/install-deps.sh installs nodejs)";
  if (run("/usr/bin/python3 -c 'import boto3' 2>/dev/null") != 0) return "python3-boto3 is not installed";
  if (!file_exists(s3rver_js())) {
    const std::string prefix = SLUICE_NPM_PREFIX;
    if (run("bash '" SLUICE_NPM_PACKAGE_DIR "/install.sh' '" + prefix + "'") != 0 || !file_exists(s3rver_js()))
      return "npm could not install s3rver into " + prefix + " (no network?): see " + prefix + "/install.log";
  }
  return "";
}

S3rver::S3rver(std::string dir, std::string bucket, bool tls)
    : dir_(std::move(dir)), bucket_(std::move(bucket)), port_(free_port()), tls_(tls) {
  if (tls_) make_tls_certificate(dir_ + ".tls");
  start();
}

S3rver::~S3rver() { stop(); }

void S3rver::start() {
  if (pid_ > 0) return;
  // s3rver makes ListObjectsV2 continuation tokens with DES, which Node's
  // OpenSSL 3 keeps in its legacy provider.
  std::vector<std::string> args = {"/usr/bin/node", "--openssl-legacy-provider", s3rver_js(), "-d", dir_, "-p",
                                    std::to_string(port_), "-a", "127.0.0.1", "--silent", "--configure-bucket", bucket_};
  if (tls_) args.insert(args.end(), {"--key", dir_ + ".tls/key.pem", "--cert", ca_file()});
  pid_ = spawn(args, dir_ + ".log");
  wait_ready(pid_, port_, "s3rver", dir_ + ".log");
}

void S3rver::stop() { terminate(pid_); }

std::string S3rver::endpoint() const {
  return (tls_ ? "https" : "http") + std::string("://127.0.0.1:") + std::to_string(port_);
}

void S3rver::upload(const std::string& dir, const std::string& prefix) const {
  const std::string script =
      "import boto3, os, sys\n"
      "s3 = boto3.client('s3', endpoint_url=sys.argv[1], aws_access_key_id='S3RVER',\n"
      "                  aws_secret_access_key='S3RVER', region_name='us-east-1')\n"
      "for name in sorted(os.listdir(sys.argv[3])):\n"
      "    s3.upload_file(os.path.join(sys.argv[3], name), sys.argv[2], sys.argv[4] + name)\n";
  const std::string path = dir_ + ".upload.py";
  write_file(path, script);
  const std::string command = (tls_ ? "AWS_CA_BUNDLE='" + ca_file() + "' " : std::string()) + "/usr/bin/python3 '" + path + "' " + endpoint() + " '" + bucket_ + "' '" + dir + "' '" +
                              prefix + "' >> '" + dir_ + ".upload.log' 2>&1";
  if (run(command) != 0) throw std::runtime_error("upload failed: " + read_file(dir_ + ".upload.log"));
}

void S3rver::put(const std::string& key, const std::string& bytes) const {
  const std::string one = temp_dir("put");
  const std::size_t slash = key.rfind('/');
  const std::string name = slash == std::string::npos ? key : key.substr(slash + 1);
  write_file(one + "/" + name, bytes);
  upload(one, slash == std::string::npos ? "" : key.substr(0, slash + 1));
}

// ---- environment

S3Environment::S3Environment(const std::string& endpoint, const std::string& key, const std::string& secret) {
  const std::vector<std::pair<std::string, std::string>> set = {
      {"AWS_ENDPOINT_URL", endpoint}, {"AWS_ACCESS_KEY_ID", key}, {"AWS_SECRET_ACCESS_KEY", secret},
      {"AWS_REGION", "us-east-1"}};
  for (const char* name : {"AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION",
                           "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL_S3", "AWS_PROFILE"}) {
    if (const char* v = std::getenv(name)) saved_.emplace_back(name, v);
    else unset_.push_back(name);
    ::unsetenv(name);
  }
  for (const auto& [k, v] : set)
    if (!v.empty()) ::setenv(k.c_str(), v.c_str(), 1);
}

S3Environment::~S3Environment() {
  for (const std::string& name : unset_) ::unsetenv(name.c_str());
  for (const auto& [k, v] : saved_) ::setenv(k.c_str(), v.c_str(), 1);
}

}  // namespace sluice::test
