#include "fault_proxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "servers.h"

namespace sluice::test {
namespace {

bool send_all(int fd, const char* data, std::size_t n) {
  while (n > 0) {
    const ssize_t w = ::send(fd, data, n, MSG_NOSIGNAL);
    if (w <= 0) return false;
    data += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

// The request's head (up to the blank line), or "" when the client closed.
std::string read_head(int fd) {
  std::string head;
  char c;
  while (head.size() < 65536 && head.find("\r\n\r\n") == std::string::npos) {
    if (::recv(fd, &c, 1, 0) != 1) return "";
    head += c;
  }
  return head;
}

// The head with its Connection header replaced by "close".
// The request head as the upstream gets it: Connection: close, and without
// If-Match when `drop_if_match`.
std::string closing(const std::string& head, bool drop_if_match) {
  std::string out;
  std::size_t at = 0;
  while (at < head.size()) {
    const std::size_t end = head.find("\r\n", at);
    const std::string line = head.substr(at, end - at);
    at = end + 2;
    if (line.empty()) break;
    if (strncasecmp(line.c_str(), "connection:", 11) == 0) continue;
    if (drop_if_match && strncasecmp(line.c_str(), "if-match:", 9) == 0) continue;
    out += line + "\r\n";
  }
  return out + "Connection: close\r\n\r\n";
}

}  // namespace

FaultProxy::FaultProxy(int upstream_port, std::vector<Fault> faults, int stall_ms)
    : upstream_port_(upstream_port), faults_(std::move(faults)), stall_ms_(stall_ms) {
  listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int one = 1;
  ::setsockopt(listener_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(listener_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(listener_, 64) != 0)
    throw std::runtime_error("fault proxy: cannot listen");
  socklen_t len = sizeof a;
  ::getsockname(listener_, reinterpret_cast<sockaddr*>(&a), &len);
  port_ = ntohs(a.sin_port);
  thread_ = std::thread([this] { serve(); });
}

FaultProxy::~FaultProxy() {
  stop_ = true;
  thread_.join();
  ::close(listener_);
  std::lock_guard<std::mutex> lock(handlers_mutex_);
  for (std::thread& t : handlers_) t.join();
}

std::string FaultProxy::url(const std::string& path) const {
  return "http://127.0.0.1:" + std::to_string(port_) + "/" + path;
}

void FaultProxy::serve() {
  while (!stop_) {
    pollfd p{listener_, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    const int client = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) continue;
    const int n = requests_++;
    const Fault fault = n < static_cast<int>(faults_.size()) ? faults_[static_cast<std::size_t>(n)] : Fault::pass;
    std::lock_guard<std::mutex> lock(handlers_mutex_);
    handlers_.emplace_back([this, client, fault] { handle(client, fault); });
  }
}

void FaultProxy::handle(int client, Fault fault) {
  const std::string head = read_head(client);
  if (head.empty()) {
    ::close(client);
    return;
  }
  if (fault == Fault::status_503 || fault == Fault::status_403) {
    const bool busy = fault == Fault::status_503;
    const std::string body = busy ? "<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>"
                                  : "<Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>";
    const std::string response = std::string(busy ? "HTTP/1.1 503 Service Unavailable" : "HTTP/1.1 403 Forbidden") +
                                 "\r\nContent-Length: " + std::to_string(body.size()) +
                                 "\r\nConnection: close\r\n\r\n" + body;
    send_all(client, response.data(), response.size());
    ::close(client);
    return;
  }
  if (fault == Fault::reset) {
    const linger hard{1, 0};
    ::setsockopt(client, SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
    ::close(client);
    return;
  }
  const int upstream = connect_local(upstream_port_);
  if (upstream < 0) {
    ::close(client);
    return;
  }
  const std::string request = closing(head, fault == Fault::no_if_match);
  send_all(upstream, request.data(), request.size());
  // An upload's body follows its head: Content-Length bytes, passed on.
  std::size_t body_left = 0;
  for (std::size_t at = 0; at < head.size();) {
    const std::size_t end = head.find("\r\n", at);
    if (end == std::string::npos) break;
    if (strncasecmp(head.c_str() + at, "content-length:", 15) == 0)
      body_left = std::strtoull(head.c_str() + at + 15, nullptr, 10);
    at = end + 2;
  }
  char buf[65536];
  while (body_left > 0) {
    const ssize_t r = ::recv(client, buf, std::min(body_left, sizeof buf), 0);
    if (r <= 0) break;
    send_all(upstream, buf, static_cast<std::size_t>(r));
    body_left -= static_cast<std::size_t>(r);
  }
  // Passed on as it comes (a client killed mid-download meets a partial
  // body, as from the server); a cut or stall needs the whole answer first.
  std::string response;
  for (;;) {
    const ssize_t r = ::recv(upstream, buf, sizeof buf, 0);
    if (r <= 0) break;
    if (fault == Fault::cut || fault == Fault::stall) response.append(buf, static_cast<std::size_t>(r));
    else if (!send_all(client, buf, static_cast<std::size_t>(r))) break;
  }
  if (fault != Fault::cut && fault != Fault::stall) {
    ::close(upstream);
    ::close(client);
    return;
  }
  ::close(upstream);
  const std::size_t body = response.find("\r\n\r\n") + 4;
  if (fault == Fault::cut) {
    response.resize(body + (response.size() - body) / 2);
  } else if (fault == Fault::stall) {
    response.resize(std::min(response.size(), body + 10));
  }
  send_all(client, response.data(), response.size());
  if (fault == Fault::stall) {
    for (int waited = 0; waited < stall_ms_ && !stop_; waited += 20)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::close(client);
}

}  // namespace sluice::test
