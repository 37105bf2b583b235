// sluice/remote/transfer.h: the transfer engine. HTTP(S) and S3 GETs through
// libcurl's multi-socket interface driven by a libuv loop: one loop, many
// transfers in flight, connections kept alive and reused, no thread per
// request.
//
//   TransferEngine engine(loop, options);
//   engine.submit({.url = "s3://b/x.tar", .file = "/cache/x.tar.partial"},
//                 [](const Response& r) { ... });
//   uv_run(loop, UV_RUN_DEFAULT);     // returns when every transfer is done
//
// or, blocking, on a loop of its own: fetch(request, options).
//
// What a request does: GET url (or, with `method`, PUT / POST / DELETE
// with a body from a file's range or a text) (s3:// is mapped onto the endpoint and signed
// with AWS Signature V4, credentials.h), with Range when it starts past byte
// 0 or asks for a length, and If-Match when it names an ETag. The body goes
// to `file` (written at its offsets; the file is created) or, without one,
// into Response::body. A conditional request (if_none_match,
// if_modified_since) answered 304 succeeds with Response::not_modified.
// on_headers, when set, sees the first successful answer's headers (status,
// object_size, etag, last_modified) before any of its body: a non-empty
// return fails the request with that text (no retry).
//
// Faults: connection failures and resets, 5xx, 429, a stall of
// stall_timeout_ms without a byte, and a body shorter than announced are
// retried up to max_retries times after an exponential backoff with jitter
// (backoff_ms, doubling, capped at 10 s, times a random factor in [0.5, 1));
// a retry resumes where the body was cut (Range, If-Match on the ETag seen
// first so that two versions are never spliced). A store that ignores Range
// (200 instead of 206) restarts a whole-object read from byte 0 (the file is
// truncated) and fails a ranged one. Any other status >= 300
// (403, 404, 301 of a wrong region, 412), an unknown host or a bad URL fails
// at once. A failed Response has `error` set: "URL: HTTP 404 (NoSuchKey: The
// specified key does not exist.)", naming the store's own code and message
// when its body has them; a Response without error holds the whole body
// asked for (length checked against Content-Length / Content-Range). A HEAD
// that fails is followed by a one-byte GET, whose body carries the message.
//
// Lifetime: the loop must outlive the engine. Destroying the engine cancels
// what is in flight (their callbacks are not called) and closes its handles;
// an engine on a caller's loop then needs one more uv_run for the closes.
// Thread and fork safety: an engine and its loop belong to one thread of one
// process. Make them after fork(), never carry one across it (curl's
// connections and libuv's handles are not the child's).
#pragma once

#include <uv.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "sluice/remote/credentials.h"

namespace sluice::remote {

struct TransferOptions {
  unsigned max_retries = 6;
  unsigned backoff_ms = 100;
  unsigned connect_timeout_ms = 10'000;
  unsigned stall_timeout_ms = 30'000;  // no byte for this long: the attempt is dropped and retried
  unsigned max_in_flight = 8;          // more submitted requests wait their turn
  S3Config s3 = s3_config_from_environment();
  TlsConfig tls = tls_config_from_environment();
};

struct Request {
  std::string url{};
  std::string query{};            // appended after '?' as given (S3: sorted, encoded)
  std::string file{};             // "" = keep the body in Response::body (at most 64 MiB)
  std::uint64_t offset = 0;     // first byte wanted (and where the file is written from)
  std::uint64_t length = 0;     // 0 = to the end of the object
  std::string if_match{};         // "" = any version
  std::string if_none_match{};    // "" = none; an ETag: 304 when it still matches
  std::string if_modified_since{};  // "" = none; an HTTP date: 304 when not changed since
  bool head = false;            // HEAD: the size and ETag only
  // Uploads (upload.h): another method, with a body. Range and If-Match are
  // GET's alone; a retried upload sends its whole body again.
  std::string method{};           // "" = GET (or HEAD); "PUT", "POST", "DELETE"
  std::string body_file{};        // the body: bytes [body_offset, body_offset + body_length) of this file,
  std::uint64_t body_offset = 0;
  std::uint64_t body_length = 0;
  std::string body_text{};        // or this text, when body_file is ""
};

struct Response;
using HeadersSeen = std::function<std::string(const Response&)>;

struct Response {
  std::string url;
  std::string error;            // "" = success
  long status = 0;              // the last HTTP status
  std::string body;             // when Request::file is ""
  std::uint64_t bytes = 0;      // body bytes received in all, from `offset`
  std::uint64_t object_size = 0;  // the whole object's size, when the store said it
  std::string etag;
  std::string last_modified;    // the Last-Modified header as sent
  bool not_modified = false;    // 304 to a conditional request
  unsigned retries = 0;
  bool ok() const { return error.empty(); }
};

// Counters since the engine was made (one process's; cache.h adds them up).
struct TransferStats {
  std::uint64_t requests = 0;        // HTTP requests sent, retries included
  std::uint64_t bytes = 0;           // body bytes received
  std::uint64_t retries = 0;
  std::uint64_t failures = 0;        // requests that ended in error
};

class TransferEngine {
 public:
  TransferEngine(uv_loop_t* loop, TransferOptions options);
  ~TransferEngine();
  TransferEngine(const TransferEngine&) = delete;
  TransferEngine& operator=(const TransferEngine&) = delete;

  // Queues `request`; `done` is called once, on the loop's thread, with its
  // outcome (never from inside submit).
  void submit(Request request, std::function<void(const Response&)> done, HeadersSeen on_headers = {});
  const TransferStats& stats() const;
  const TransferOptions& options() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// Blocking: one request on a loop of its own (on_headers as submit's).
Response fetch(const Request& request, const TransferOptions& options, const HeadersSeen& on_headers = {});
// Blocking: the requests all in flight at once (up to max_in_flight) on a
// loop of their own; their responses, in the requests' order.
std::vector<Response> fetch_all(const std::vector<Request>& requests, const TransferOptions& options);

// The http(s) URL a GET of `url` goes to (s3:// mapped onto the endpoint).
std::string http_url(const std::string& url, const S3Config& s3);

}  // namespace sluice::remote
