// Test support: a TCP proxy on 127.0.0.1 that breaks requests on purpose.
//
//   FaultProxy proxy(nginx.port(), {Fault::status_503, Fault::reset, Fault::cut});
//   fetch(proxy.url("x.bin"))   // 1st request: 503, 2nd: reset, 3rd: body cut, then passed
//
// Each connection carries one request (the proxy asks the upstream for
// Connection: close and closes after the response); a request's body
// (Content-Length) is passed on after its head. The n-th request meets
// faults[n], or passes once the list is used up. Faults:
//   pass        forwarded untouched
//   status_503  "503 Slow Down" without asking the upstream
//   status_403  "403 AccessDenied" without asking it (as S3 refuses a
//               listing to credentials without s3:ListBucket)
//   reset       the connection reset (RST) as soon as the request is read
//   cut         the upstream's response cut after its headers and half its body
//   stall       the headers and a few bytes, then silence for stall_ms, then closed
//   no_if_match forwarded without its If-Match header, as a store that
//               ignores the condition answers (the current version's bytes)
// Runs on its own thread; stops when destroyed. Thread safety: requests()
// may be read from any thread.
#pragma once

#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace sluice::test {

enum class Fault { pass, status_503, status_403, reset, cut, stall, no_if_match };

class FaultProxy {
 public:
  FaultProxy(int upstream_port, std::vector<Fault> faults, int stall_ms = 3000);
  ~FaultProxy();
  std::string url(const std::string& path) const;
  int requests() const { return requests_.load(); }

 private:
  void serve();
  void handle(int client, Fault fault);

  int upstream_port_;
  std::vector<Fault> faults_;
  int stall_ms_;
  int listener_ = -1;
  int port_ = 0;
  std::atomic<int> requests_{0};
  std::atomic<bool> stop_{false};
  std::vector<std::thread> handlers_;
  std::mutex handlers_mutex_;
  std::thread thread_;
};

}  // namespace sluice::test
