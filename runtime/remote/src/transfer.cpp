// The transfer engine: curl's multi-socket interface on a libuv loop (the
// shape of curl's docs/examples/multi-uv.c). curl says which sockets to watch
// (socket_cb starts and stops a uv_poll per socket) and when to call it back
// (timer_cb arms one uv_timer); libuv's callbacks hand the events back with
// curl_multi_socket_action, and finished transfers are collected after each.
// Everything runs on the loop's thread; nothing here locks.
#include "sluice/remote/transfer.h"

#include <curl/curl.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <list>
#include <mutex>
#include <random>

#include "sluice/error.h"
#include "sluice/remote/url.h"
#include "store_message.h"

namespace sluice::remote {
namespace {

void global_init() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

bool transient(CURLcode code) {
  switch (code) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_SSL_CONNECT_ERROR:
      return true;
    default:
      return false;
  }
}

// A body kept in memory (listings, error documents) larger than this is refused.
constexpr std::size_t kMaxBodyInMemory = 64u << 20;

struct Transfer;

struct SocketWatch {
  uv_poll_t poll;
  curl_socket_t fd;
  TransferEngine::Impl* engine;
};

}  // namespace

struct TransferEngine::Impl {
  uv_loop_t* loop;
  TransferOptions options;
  CURLM* multi = nullptr;
  uv_timer_t* timer = nullptr;     // curl's timeouts; freed by its close callback
  uv_timer_t* watchdog = nullptr;  // stalls; unreferenced, so it never keeps the loop alive
  TransferStats stats;
  std::list<std::unique_ptr<Transfer>> active;   // in curl, or waiting out a backoff
  std::deque<std::unique_ptr<Transfer>> queued;  // beyond max_in_flight
  unsigned in_flight = 0;
  std::mt19937_64 jitter{std::random_device{}()};
  bool closing = false;

  void start_next();
  void begin(Transfer& t);
  void finish(Transfer& t, CURLcode code);
  void complete(Transfer& t);
  void check_done();
  void check_stalls();
};

namespace {

struct Transfer {
  TransferEngine::Impl* engine = nullptr;
  Request request;
  std::function<void(const Response&)> done;
  HeadersSeen on_headers;        // called once, at the first 2xx answer's end of headers
  Response response;
  CURL* easy = nullptr;
  curl_slist* headers = nullptr;
  int fd = -1;
  int body_fd = -1;              // Request::body_file, read by read_cb
  std::uint64_t sent = 0;        // body bytes handed to curl in this attempt
  std::uint64_t received = 0;    // body bytes kept, from request.offset
  std::uint64_t announced = 0;   // this attempt's Content-Length (0 = unknown)
  std::uint64_t attempt_bytes = 0;
  long attempt_status = 0;
  bool range_sent = false;
  std::string write_problem;     // why write_cb refused the body, when it did
  bool message_probe = false;    // a GET after a failed HEAD, for the store's message
  bool refused = false;          // on_headers refused the answer, or it was another version
  std::string expected_etag;     // the version this attempt asked for with If-Match ("": any)
  bool changed = false;          // the answer was another version than expected_etag
  std::string error_body;        // the body of a status >= 300, for its message
  char error_text[CURL_ERROR_SIZE] = {};  // curl's own words for a failed attempt
  uv_timer_t* backoff = nullptr;
  std::uint64_t last_byte_ms = 0;  // uv_now when this attempt began or last received a byte
  std::list<std::unique_ptr<Transfer>>::iterator self;

  ~Transfer() {
    if (easy) curl_easy_cleanup(easy);
    if (headers) curl_slist_free_all(headers);
    if (fd >= 0) ::close(fd);
    if (body_fd >= 0) ::close(body_fd);
  }
  bool get() const { return request.method.empty(); }
  std::uint64_t body_size() const {
    return request.body_file.empty() ? request.body_text.size() : request.body_length;
  }
};

std::uint64_t parse_u64(std::string_view s) {
  std::uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') break;
    v = v * 10 + static_cast<std::uint64_t>(c - '0');
  }
  return v;
}

// Two ETags name the same version (quotes and a weak W/ prefix aside).
bool same_version(std::string_view a, std::string_view b) {
  auto bare = [](std::string_view e) {
    if (e.rfind("W/", 0) == 0) e.remove_prefix(2);
    if (e.size() >= 2 && e.front() == '"' && e.back() == '"') e = e.substr(1, e.size() - 2);
    return e;
  };
  return bare(a) == bare(b);
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

size_t header_cb(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  t->last_byte_ms = uv_now(t->engine->loop);
  const std::string line(data, size * n);
  if (line.rfind("HTTP/", 0) == 0) {  // a new response (after a redirect or 100): forget the last
    t->announced = 0;
    return size * n;
  }
  if (line == "\r\n" || line == "\n") {  // the end of one answer's headers
    long status = 0;
    curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &status);
    // Bytes of one version only: an answer to If-Match (a resumed download,
    // or a retry going on from the bytes kept) that is another version means
    // the store ignored the condition (or restarted a ranged read with 200);
    // refused as the 412 it should have been, so that the caller starts over.
    if (status >= 200 && status < 300 && !t->expected_etag.empty() && !t->response.etag.empty() &&
        !same_version(t->response.etag, t->expected_etag)) {
      t->write_problem = "the object changed during the download (ETag " + t->response.etag + ", the bytes kept so far " +
                         "are of " + t->expected_etag + ") and the store did not refuse If-Match";
      t->refused = t->changed = true;
      return 0;  // curl fails the transfer with CURLE_WRITE_ERROR
    }
    if (status >= 200 && status < 300 && t->on_headers) {
      Response seen = t->response;
      seen.status = status;
      if (status == 200 && seen.object_size == 0) seen.object_size = t->announced;
      const HeadersSeen hook = std::move(t->on_headers);
      t->on_headers = nullptr;
      t->write_problem = hook(seen);
      if (!t->write_problem.empty()) {
        t->refused = true;
        return 0;  // curl fails the transfer with CURLE_WRITE_ERROR
      }
    }
    return size * n;
  }
  const std::size_t colon = line.find(':');
  if (colon == std::string::npos) return size * n;
  const std::string name = lower(line.substr(0, colon));
  std::string value = line.substr(colon + 1);
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.erase(0, 1);
  while (!value.empty() && (value.back() == '\r' || value.back() == '\n' || value.back() == ' ')) value.pop_back();
  if (name == "content-length") {
    t->announced = parse_u64(value);
  } else if (name == "etag") {
    t->response.etag = value;
  } else if (name == "last-modified") {
    t->response.last_modified = value;
  } else if (name == "content-range") {  // bytes A-B/TOTAL
    const std::size_t slash = value.find('/');
    if (slash != std::string::npos && value[slash + 1] != '*') t->response.object_size = parse_u64(value.substr(slash + 1));
  }
  return size * n;
}

size_t write_cb(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  t->last_byte_ms = uv_now(t->engine->loop);
  const size_t bytes = size * n;
  if (t->attempt_bytes == 0 && t->attempt_status == 0) {
    curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &t->attempt_status);
    if (t->attempt_status == 200 && (t->received > 0 || t->request.offset > 0)) {
      // The store ignored Range: the whole object comes from byte 0. A
      // whole-object read starts over; a ranged read cannot use it.
      if (t->request.length > 0) {
        t->write_problem = "the store ignored Range (200 instead of 206)";
        return 0;
      }
      t->request.offset = 0;
      t->received = 0;
      t->response.body.clear();
      if (t->fd >= 0 && ::ftruncate(t->fd, 0) != 0) {
        t->write_problem = "cannot truncate " + t->request.file + ": " + std::strerror(errno);
        return 0;
      }
    }
  }
  t->attempt_bytes += bytes;
  t->engine->stats.bytes += bytes;
  if (t->attempt_status >= 300) {
    if (t->error_body.size() < 64 * 1024) t->error_body.append(data, std::min<size_t>(bytes, 64 * 1024));
    return bytes;
  }
  if (t->request.length > 0 && t->received + bytes > t->request.length) {
    t->write_problem = "the store sent more than the " + std::to_string(t->request.length) + " bytes asked for";
    return 0;
  }
  if (t->fd >= 0) {
    size_t done = 0;
    while (done < bytes) {
      const ssize_t w = ::pwrite(t->fd, data + done, bytes - done,
                                 static_cast<off_t>(t->request.offset + t->received + done));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        t->write_problem = "cannot write " + t->request.file + ": " + std::strerror(errno);
        return 0;
      }
      done += static_cast<size_t>(w);
    }
  } else {
    if (t->response.body.size() + bytes > kMaxBodyInMemory) {
      t->write_problem = "the answer passes " + std::to_string(kMaxBodyInMemory >> 20) + " MiB";
      return 0;
    }
    t->response.body.append(data, bytes);
  }
  t->received += bytes;
  return bytes;
}

// An upload's body, from its file's range or its text; restarts at 0 on each
// attempt (begin resets `sent`).
size_t read_cb(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  t->last_byte_ms = uv_now(t->engine->loop);
  const std::uint64_t left = t->body_size() - t->sent;
  const size_t want = static_cast<size_t>(std::min<std::uint64_t>(left, size * n));
  if (want == 0) return 0;
  if (t->request.body_file.empty()) {
    std::memcpy(data, t->request.body_text.data() + t->sent, want);
  } else {
    const ssize_t got = ::pread(t->body_fd, data, want, static_cast<off_t>(t->request.body_offset + t->sent));
    if (got <= 0) {
      t->write_problem = "cannot read " + t->request.body_file + (got < 0 ? ": " + std::string(std::strerror(errno))
                                                                          : std::string(": shorter than expected"));
      return CURL_READFUNC_ABORT;
    }
    t->sent += static_cast<std::uint64_t>(got);
    return static_cast<size_t>(got);
  }
  t->sent += want;
  return want;
}

void close_free(uv_handle_t* h) {
  if (h->type == UV_POLL) delete reinterpret_cast<SocketWatch*>(h);
  else delete reinterpret_cast<uv_timer_t*>(h);
}

void poll_cb(uv_poll_t* handle, int status, int events) {
  auto* w = reinterpret_cast<SocketWatch*>(handle);
  int flags = 0;
  if (status < 0) flags |= CURL_CSELECT_ERR;
  if (events & UV_READABLE) flags |= CURL_CSELECT_IN;
  if (events & UV_WRITABLE) flags |= CURL_CSELECT_OUT;
  TransferEngine::Impl* engine = w->engine;
  int running = 0;
  curl_multi_socket_action(engine->multi, w->fd, flags, &running);
  engine->check_done();
}

int socket_cb(CURL*, curl_socket_t s, int action, void* userp, void* socketp) {
  auto* engine = static_cast<TransferEngine::Impl*>(userp);
  auto* w = static_cast<SocketWatch*>(socketp);
  if (action == CURL_POLL_REMOVE) {
    if (w) {
      uv_poll_stop(&w->poll);
      uv_close(reinterpret_cast<uv_handle_t*>(&w->poll), close_free);
      curl_multi_assign(engine->multi, s, nullptr);
    }
    return 0;
  }
  if (!w) {
    w = new SocketWatch{};
    w->fd = s;
    w->engine = engine;
    uv_poll_init_socket(engine->loop, &w->poll, s);
    curl_multi_assign(engine->multi, s, w);
  }
  int events = 0;
  if (action == CURL_POLL_IN || action == CURL_POLL_INOUT) events |= UV_READABLE;
  if (action == CURL_POLL_OUT || action == CURL_POLL_INOUT) events |= UV_WRITABLE;
  uv_poll_start(&w->poll, events, poll_cb);
  return 0;
}

void on_timeout(uv_timer_t* timer) {
  auto* engine = static_cast<TransferEngine::Impl*>(timer->data);
  int running = 0;
  curl_multi_socket_action(engine->multi, CURL_SOCKET_TIMEOUT, 0, &running);
  engine->check_done();
}

int timer_cb(CURLM*, long timeout_ms, void* userp) {
  auto* engine = static_cast<TransferEngine::Impl*>(userp);
  if (timeout_ms < 0) uv_timer_stop(engine->timer);
  else uv_timer_start(engine->timer, on_timeout, static_cast<std::uint64_t>(timeout_ms), 0);
  return 0;
}

void on_backoff(uv_timer_t* timer) {
  auto* t = static_cast<Transfer*>(timer->data);
  uv_close(reinterpret_cast<uv_handle_t*>(timer), close_free);
  t->backoff = nullptr;
  t->engine->begin(*t);
}

}  // namespace

std::string http_url(const std::string& text, const S3Config& s3) {
  const Url url = parse_url(text);
  if (url.scheme != Scheme::s3) return text;
  if (!s3.problem.empty()) throw Error(text + ": " + s3.problem);
  if (!s3.endpoint.empty()) {
    if (s3.path_style) return s3.endpoint + "/" + url.bucket() + "/" + uri_encode(url.key(), true);
    const std::size_t scheme_end = s3.endpoint.find("://");
    const std::size_t host = scheme_end == std::string::npos ? 0 : scheme_end + 3;
    return s3.endpoint.substr(0, host) + url.bucket() + "." + s3.endpoint.substr(host) + "/" + uri_encode(url.key(), true);
  }
  return "https://" + url.bucket() + ".s3." + s3.region + ".amazonaws.com/" + uri_encode(url.key(), true);
}

void TransferEngine::Impl::start_next() {
  while (!closing && in_flight < std::max(1u, options.max_in_flight) && !queued.empty()) {
    active.push_back(std::move(queued.front()));
    queued.pop_front();
    Transfer& t = *active.back();
    t.self = std::prev(active.end());
    ++in_flight;
    begin(t);
  }
}

void TransferEngine::Impl::begin(Transfer& t) {
  ++stats.requests;
  t.last_byte_ms = uv_now(loop);
  t.attempt_bytes = 0;
  t.attempt_status = 0;
  t.announced = 0;
  t.error_body.clear();
  t.write_problem.clear();
  t.sent = 0;
  const bool s3 = t.request.url.rfind("s3://", 0) == 0;
  std::string target;
  try {
    target = http_url(t.request.url, options.s3);
  } catch (const Error& e) {
    t.response.error = e.what();
    return complete(t);
  }
  if (!t.request.query.empty()) target += "?" + t.request.query;
  if (t.easy) curl_easy_cleanup(t.easy);
  if (t.headers) curl_slist_free_all(t.headers);
  t.headers = nullptr;
  t.easy = curl_easy_init();
  CURL* e = t.easy;
  curl_easy_setopt(e, CURLOPT_URL, target.c_str());
  curl_easy_setopt(e, CURLOPT_PRIVATE, &t);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, write_cb);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, &t);
  curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, header_cb);
  curl_easy_setopt(e, CURLOPT_HEADERDATA, &t);
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, s3 ? 0L : 1L);  // S3 says a wrong region with 301
  curl_easy_setopt(e, CURLOPT_MAXREDIRS, 5L);
  curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(options.connect_timeout_ms));
  curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, nullptr);  // bytes as stored: lengths must match
  t.error_text[0] = '\0';
  curl_easy_setopt(e, CURLOPT_ERRORBUFFER, t.error_text);
  // The CAs https trusts (credentials.h): an s3:// request's own bundle first.
  const std::string& ca_file = s3 && !options.s3.ca_bundle.empty() ? options.s3.ca_bundle : options.tls.ca_file;
  if (!ca_file.empty()) curl_easy_setopt(e, CURLOPT_CAINFO, ca_file.c_str());
  if (!options.tls.ca_dir.empty()) curl_easy_setopt(e, CURLOPT_CAPATH, options.tls.ca_dir.c_str());
  if (t.request.head) curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
  if (t.request.method == "PUT" || t.request.method == "POST") {
    const auto size = static_cast<curl_off_t>(t.body_size());
    curl_easy_setopt(e, CURLOPT_READFUNCTION, read_cb);
    curl_easy_setopt(e, CURLOPT_READDATA, &t);
    if (t.request.method == "PUT") {
      curl_easy_setopt(e, CURLOPT_UPLOAD, 1L);
      curl_easy_setopt(e, CURLOPT_INFILESIZE_LARGE, size);
    } else {
      curl_easy_setopt(e, CURLOPT_POST, 1L);
      curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, size);
    }
    // No 100-continue round trip; the content type curl would guess for a POST is not ours.
    t.headers = curl_slist_append(t.headers, "Expect:");
    t.headers = curl_slist_append(t.headers, "Content-Type: application/octet-stream");
  } else if (!t.get()) {
    curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, t.request.method.c_str());
  }
  const std::uint64_t from = t.request.offset + t.received;
  t.range_sent = t.get() && (from > 0 || t.request.length > 0);
  if (t.range_sent) {
    std::string range = std::to_string(from) + "-";
    if (t.request.length > 0) range += std::to_string(t.request.offset + t.request.length - 1);
    curl_easy_setopt(e, CURLOPT_RANGE, range.c_str());
  }
  const std::string& match = !t.request.if_match.empty()  ? t.request.if_match
                             : t.received > 0 && t.get() ? t.response.etag
                                                         : std::string();
  t.expected_etag = match;
  if (!match.empty()) t.headers = curl_slist_append(t.headers, ("If-Match: " + match).c_str());
  if (!t.request.if_none_match.empty())
    t.headers = curl_slist_append(t.headers, ("If-None-Match: " + t.request.if_none_match).c_str());
  if (!t.request.if_modified_since.empty())
    t.headers = curl_slist_append(t.headers, ("If-Modified-Since: " + t.request.if_modified_since).c_str());
  const Credentials& c = options.s3.credentials;
  if (s3 && !c.anonymous()) {
    const std::string sigv4 = "aws:amz:" + options.s3.region + ":s3";
    curl_easy_setopt(e, CURLOPT_AWS_SIGV4, sigv4.c_str());
    curl_easy_setopt(e, CURLOPT_USERNAME, c.access_key.c_str());
    curl_easy_setopt(e, CURLOPT_PASSWORD, c.secret_key.c_str());
    t.headers = curl_slist_append(t.headers, "x-amz-content-sha256: UNSIGNED-PAYLOAD");
    if (!c.session_token.empty())
      t.headers = curl_slist_append(t.headers, ("x-amz-security-token: " + c.session_token).c_str());
  }
  if (t.headers) curl_easy_setopt(e, CURLOPT_HTTPHEADER, t.headers);
  curl_multi_add_handle(multi, e);
}

void TransferEngine::Impl::check_done() {
  int left = 0;
  while (CURLMsg* msg = curl_multi_info_read(multi, &left)) {
    if (msg->msg != CURLMSG_DONE) continue;
    Transfer* t = nullptr;
    curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &t);
    const CURLcode code = msg->data.result;
    curl_multi_remove_handle(multi, msg->easy_handle);
    finish(*t, code);
  }
}

// A transfer in curl that has received nothing for stall_timeout_ms is
// taken out and handled as a timeout (retried, resumed). curl's own
// low-speed limit averages over several seconds, so a stall right after the
// headers would go unseen for that long.
void TransferEngine::Impl::check_stalls() {
  const std::uint64_t now = uv_now(loop);
  std::vector<Transfer*> stalled;
  for (auto& t : active)
    if (!t->backoff && t->easy && now - t->last_byte_ms >= options.stall_timeout_ms) stalled.push_back(t.get());
  for (Transfer* t : stalled) {
    curl_multi_remove_handle(multi, t->easy);
    finish(*t, CURLE_OPERATION_TIMEDOUT);
  }
}

void TransferEngine::Impl::finish(Transfer& t, CURLcode code) {
  long status = 0;
  curl_easy_getinfo(t.easy, CURLINFO_RESPONSE_CODE, &status);
  t.response.status = status;
  std::string why;
  bool retry = false;
  const bool conditional = !t.request.if_none_match.empty() || !t.request.if_modified_since.empty();
  if (code == CURLE_OK && status == 304 && conditional) {
    t.response.not_modified = true;
    t.response.bytes = t.received;
    return complete(t);
  }
  if (t.refused) {
    why = t.write_problem;
    if (t.changed) t.response.status = 412;  // what the store should have answered
  } else if (code != CURLE_OK && !(code == CURLE_WRITE_ERROR && status >= 300)) {
    why = curl_easy_strerror(code);
    // TLS's general words say little ("SSL peer certificate ... was not OK"):
    // curl's own say what ("SSL certificate problem: self-signed certificate").
    const bool tls = code == CURLE_PEER_FAILED_VERIFICATION || code == CURLE_SSL_CONNECT_ERROR ||
                     code == CURLE_SSL_CACERT_BADFILE || code == CURLE_SSL_CERTPROBLEM;
    if (tls && t.error_text[0] != '\0') why = t.error_text;
    if (code == CURLE_PEER_FAILED_VERIFICATION)
      why += " (no CA this process trusts signed the server's certificate; for a private CA give its PEM "
             "file as AWS_CA_BUNDLE for s3://, or CURL_CA_BUNDLE or SSL_CERT_FILE)";
    if (code == CURLE_SSL_CACERT_BADFILE)
      why += " (the CA file named by AWS_CA_BUNDLE, the profile's ca_bundle, CURL_CA_BUNDLE or SSL_CERT_FILE)";
    if (code == CURLE_OPERATION_TIMEDOUT)
      why = "no byte for " + std::to_string(options.stall_timeout_ms) + " ms (remote_timeout_ms)";
    retry = transient(code);
    if ((code == CURLE_WRITE_ERROR || code == CURLE_ABORTED_BY_CALLBACK) && !t.write_problem.empty())
      why = t.write_problem;
    if (t.request.url.rfind("s3://", 0) == 0 &&
        (code == CURLE_COULDNT_RESOLVE_HOST || code == CURLE_COULDNT_CONNECT || code == CURLE_SSL_CONNECT_ERROR ||
         code == CURLE_PEER_FAILED_VERIFICATION)) {
      // Which server an s3:// URL went to, and where that came from.
      char* used = nullptr;
      curl_easy_getinfo(t.easy, CURLINFO_EFFECTIVE_URL, &used);
      std::string where = used != nullptr ? std::string("asking ") + used : "";
      if (options.s3.endpoint.empty())
        where += std::string(where.empty() ? "" : ", ") +
                 "AWS's own endpoint: for another store set AWS_ENDPOINT_URL or the profile's endpoint_url";
      if (!where.empty()) why += " (" + where + ")";
    }
  } else if (status == 429 || status >= 500) {
    why = "HTTP " + std::to_string(status) + store_message(t.error_body);
    retry = true;
  } else if (status >= 300 && t.request.head && !closing) {
    // A HEAD answer has no body, so no message from the store: ask for its
    // first byte to hear why (the error document comes with the same status).
    t.request.head = false;
    t.request.length = 1;
    t.message_probe = true;
    return begin(t);
  } else if (status >= 300) {
    why = "HTTP " + std::to_string(status) + store_message(t.error_body);
    if (status == 301 || status == 307) why += " (a wrong region or endpoint? AWS_REGION is " + options.s3.region + ")";
  } else if (!t.request.head) {
    if (status == 200 && t.response.object_size == 0) t.response.object_size = t.announced;
    if (t.announced > 0 && t.attempt_bytes < t.announced) {
      why = "the body ended after " + std::to_string(t.attempt_bytes) + " of " + std::to_string(t.announced) +
            " bytes";
      retry = true;
    }
  } else {
    t.response.object_size = t.announced;
  }
  if (why.empty() && t.message_probe) why = "HTTP " + std::to_string(status) + " to HEAD, then not to GET";
  if (why.empty()) {
    t.response.bytes = t.received;
    return complete(t);
  }
  if (retry && t.response.retries < options.max_retries && !closing) {
    ++t.response.retries;
    ++stats.retries;
    const double cap = 10'000.0;
    const double base = std::min(cap, options.backoff_ms * static_cast<double>(1ull << std::min(t.response.retries - 1, 20u)));
    const double delay = base * std::uniform_real_distribution<double>(0.5, 1.0)(jitter);
    t.backoff = new uv_timer_t;
    uv_timer_init(loop, t.backoff);
    t.backoff->data = &t;
    uv_timer_start(t.backoff, on_backoff, static_cast<std::uint64_t>(delay), 0);
    return;
  }
  t.response.error = t.request.url + ": " + why;
  if (retry) t.response.error += " (gave up after " + std::to_string(t.response.retries) + " retries)";
  complete(t);
}

void TransferEngine::Impl::complete(Transfer& t) {
  if (!t.response.ok()) ++stats.failures;
  t.response.url = t.request.url;
  std::unique_ptr<Transfer> owned = std::move(*t.self);
  active.erase(t.self);
  --in_flight;
  if (owned->fd >= 0) {
    ::close(owned->fd);
    owned->fd = -1;
  }
  owned->done(owned->response);
  start_next();
}

TransferEngine::TransferEngine(uv_loop_t* loop, TransferOptions options) : impl_(std::make_unique<Impl>()) {
  global_init();
  impl_->loop = loop;
  impl_->options = std::move(options);
  impl_->multi = curl_multi_init();
  impl_->timer = new uv_timer_t;
  uv_timer_init(loop, impl_->timer);
  impl_->timer->data = impl_.get();
  curl_multi_setopt(impl_->multi, CURLMOPT_SOCKETFUNCTION, socket_cb);
  curl_multi_setopt(impl_->multi, CURLMOPT_SOCKETDATA, impl_.get());
  curl_multi_setopt(impl_->multi, CURLMOPT_TIMERFUNCTION, timer_cb);
  curl_multi_setopt(impl_->multi, CURLMOPT_TIMERDATA, impl_.get());
  impl_->watchdog = new uv_timer_t;
  uv_timer_init(loop, impl_->watchdog);
  impl_->watchdog->data = impl_.get();
  const std::uint64_t tick = std::clamp<std::uint64_t>(impl_->options.stall_timeout_ms / 4, 10, 1000);
  uv_timer_start(impl_->watchdog, [](uv_timer_t* w) { static_cast<Impl*>(w->data)->check_stalls(); }, tick, tick);
  uv_unref(reinterpret_cast<uv_handle_t*>(impl_->watchdog));
  curl_multi_setopt(impl_->multi, CURLMOPT_MAX_HOST_CONNECTIONS, static_cast<long>(impl_->options.max_in_flight));
}

TransferEngine::~TransferEngine() {
  impl_->closing = true;
  for (auto& t : impl_->active) {
    if (t->backoff) uv_close(reinterpret_cast<uv_handle_t*>(t->backoff), close_free);
    else if (t->easy) curl_multi_remove_handle(impl_->multi, t->easy);  // closes its sockets' polls
  }
  impl_->active.clear();
  impl_->queued.clear();
  curl_multi_cleanup(impl_->multi);  // closes the cached connections, and their polls
  uv_timer_stop(impl_->timer);
  uv_close(reinterpret_cast<uv_handle_t*>(impl_->timer), close_free);
  uv_timer_stop(impl_->watchdog);
  uv_close(reinterpret_cast<uv_handle_t*>(impl_->watchdog), close_free);
}

void TransferEngine::submit(Request request, std::function<void(const Response&)> done, HeadersSeen on_headers) {
  auto t = std::make_unique<Transfer>();
  t->engine = impl_.get();
  t->request = std::move(request);
  t->done = std::move(done);
  t->on_headers = std::move(on_headers);
  if (!t->request.file.empty()) {
    t->fd = ::open(t->request.file.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (t->fd < 0) {
      t->response.error = "cannot create " + t->request.file + ": " + std::strerror(errno);
    }
  }
  if (!t->request.body_file.empty() && t->response.error.empty()) {
    t->body_fd = ::open(t->request.body_file.c_str(), O_RDONLY | O_CLOEXEC);
    if (t->body_fd < 0) t->response.error = "cannot open " + t->request.body_file + ": " + std::strerror(errno);
  }
  impl_->queued.push_back(std::move(t));
  // Started from the loop, so that `done` never runs inside submit.
  uv_timer_start(impl_->timer, [](uv_timer_t* timer) {
    auto* engine = static_cast<TransferEngine::Impl*>(timer->data);
    // Requests that failed before a byte was asked for complete here.
    for (auto it = engine->queued.begin(); it != engine->queued.end();) {
      if ((*it)->response.error.empty()) {
        ++it;
        continue;
      }
      engine->active.push_back(std::move(*it));
      it = engine->queued.erase(it);
      engine->active.back()->self = std::prev(engine->active.end());
      ++engine->in_flight;
      engine->complete(*engine->active.back());
    }
    engine->start_next();
    on_timeout(timer);
  }, 0, 0);
}

const TransferStats& TransferEngine::stats() const { return impl_->stats; }
const TransferOptions& TransferEngine::options() const { return impl_->options; }

namespace {

// The requests on a loop of their own, each with `on_headers`.
std::vector<Response> run_on_own_loop(const std::vector<Request>& requests, const TransferOptions& options,
                                      const HeadersSeen& on_headers) {
  uv_loop_t loop;
  uv_loop_init(&loop);
  std::vector<Response> out(requests.size());
  {
    TransferEngine engine(&loop, options);
    for (std::size_t i = 0; i < requests.size(); ++i)
      engine.submit(requests[i], [&out, i](const Response& r) { out[i] = r; }, on_headers);
    uv_run(&loop, UV_RUN_DEFAULT);
  }
  uv_run(&loop, UV_RUN_DEFAULT);
  uv_loop_close(&loop);
  return out;
}

}  // namespace

Response fetch(const Request& request, const TransferOptions& options, const HeadersSeen& on_headers) {
  return std::move(run_on_own_loop({request}, options, on_headers).front());
}

std::vector<Response> fetch_all(const std::vector<Request>& requests, const TransferOptions& options) {
  return run_on_own_loop(requests, options, {});
}

}  // namespace sluice::remote
