// Uploads: one PUT (S3, or a web server taking PUT), or S3's multipart upload with its parts in flight on one
// TransferEngine (transfer.h), on a libuv loop the Uploader owns. Each call
// runs the loop until its requests are done, so an Uploader is blocking and
// belongs to one thread.
#include "sluice/remote/upload.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "sluice/error.h"
#include "sluice/remote/url.h"
#include "store_message.h"
#include "xml_text.h"

namespace sluice::remote {

std::uint64_t UploadOptions::from_environment(const char* name, std::uint64_t otherwise) {
  const char* text = std::getenv(name);
  if (!text || !*text) return otherwise;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(text, &end, 10);
  if (*end != '\0' || v == 0) throw Error(std::string(name) + " expects a count of bytes, got '" + text + "'");
  return v;
}

void check_writable(const std::string& url) {
  parse_url(url);  // throws naming a URL that is not s3://, http:// or https://
}

struct Uploader::Impl {
  UploadOptions options;
  uv_loop_t loop{};
  std::unique_ptr<TransferEngine> engine;
  std::uint64_t multipart = 0;

  // Runs `requests` together; their responses in the same order.
  std::vector<Response> run(std::vector<Request> requests) {
    std::vector<Response> out(requests.size());
    for (std::size_t i = 0; i < requests.size(); ++i)
      engine->submit(std::move(requests[i]), [&out, i](const Response& r) { out[i] = r; });
    uv_run(&loop, UV_RUN_DEFAULT);
    return out;
  }
  Response run(Request request) {
    std::vector<Request> one;
    one.push_back(std::move(request));
    return std::move(run(std::move(one))[0]);
  }

  void abort_after(const std::string& url, const std::string& upload_id, const std::string& why) {
    Request abort{.url = url, .query = "uploadId=" + uri_encode(upload_id, false)};
    abort.method = "DELETE";
    const Response r = run(std::move(abort));
    std::string message = "multipart upload of " + url + " failed: " + why;
    if (!r.ok()) message += "; aborting it failed too (" + r.error + "), so its parts may stay in the store";
    throw Error(message);
  }

  void put_multipart(const std::string& path, const std::string& url, std::uint64_t size) {
    ++multipart;
    Request create{.url = url, .query = "uploads="};
    create.method = "POST";
    const Response created = run(std::move(create));
    if (!created.ok()) throw Error("cannot start a multipart upload: " + created.error);
    const std::string upload_id = detail::xml_text(created.body, "UploadId");
    if (upload_id.empty())
      throw Error("cannot start a multipart upload of " + url + ": the store's answer has no UploadId");
    const std::string id_query = "uploadId=" + uri_encode(upload_id, false);

    const std::uint64_t part = std::max(options.part_size, kMinPartSize);
    std::vector<Request> parts;
    for (std::uint64_t at = 0, n = 1; at < size; at += part, ++n) {
      Request r{.url = url, .query = "partNumber=" + std::to_string(n) + "&" + id_query};
      r.method = "PUT";
      r.body_file = path;
      r.body_offset = at;
      r.body_length = std::min(part, size - at);
      parts.push_back(std::move(r));
    }
    if (parts.size() > 10'000) abort_after(url, upload_id, "more than 10,000 parts (raise the part size)");
    const std::vector<Response> done = run(std::move(parts));
    std::string list;
    for (std::size_t i = 0; i < done.size(); ++i) {
      if (!done[i].ok()) abort_after(url, upload_id, "part " + std::to_string(i + 1) + ": " + done[i].error);
      if (done[i].etag.empty()) abort_after(url, upload_id, "part " + std::to_string(i + 1) + " came back without an ETag");
      list += "<Part><PartNumber>" + std::to_string(i + 1) + "</PartNumber><ETag>" + done[i].etag + "</ETag></Part>";
    }
    Request complete{.url = url, .query = id_query};
    complete.method = "POST";
    complete.body_text = "<CompleteMultipartUpload>" + list + "</CompleteMultipartUpload>";
    const Response r = run(std::move(complete));
    if (!r.ok()) abort_after(url, upload_id, "completing it: " + r.error);
    if (r.body.find("<Error>") != std::string::npos)
      abort_after(url, upload_id, "completing it: HTTP " + std::to_string(r.status) + store_message(r.body));
  }
};

Uploader::Uploader(UploadOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
  uv_loop_init(&impl_->loop);
  impl_->engine = std::make_unique<TransferEngine>(&impl_->loop, impl_->options.transfer);
}

Uploader::~Uploader() {
  impl_->engine.reset();
  uv_run(&impl_->loop, UV_RUN_DEFAULT);  // the engine's closes
  uv_loop_close(&impl_->loop);
}

const UploadOptions& Uploader::options() const { return impl_->options; }
std::uint64_t Uploader::multipart_uploads() const { return impl_->multipart; }

void Uploader::put_file(const std::string& path, const std::string& url) {
  check_writable(url);
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0) throw Error("cannot upload " + path + ": " + std::strerror(errno));
  const auto size = static_cast<std::uint64_t>(st.st_size);
  if (parse_url(url).scheme == Scheme::s3 && size >= impl_->options.multipart_threshold && size > 0)
    return impl_->put_multipart(path, url, size);
  Request r{.url = url};
  r.method = "PUT";
  r.body_file = path;
  r.body_length = size;
  const Response done = impl_->run(std::move(r));
  if (!done.ok()) throw Error("cannot upload " + path + ": " + done.error);
}

void Uploader::put_text(const std::string& text, const std::string& url) {
  check_writable(url);
  Request r{.url = url};
  r.method = "PUT";
  r.body_text = text;
  const Response done = impl_->run(std::move(r));
  if (!done.ok()) throw Error("cannot upload " + url + ": " + done.error);
}

namespace {
// Absent: S3's NoSuchKey (its NoSuchBucket is an error); any 404 of a web server.
bool no_such_key(const std::string& url, const Response& r) {
  if (r.status != 404) return false;
  return parse_url(url).scheme != Scheme::s3 || r.error.find("NoSuchKey") != std::string::npos;
}
}  // namespace

std::optional<std::uint64_t> Uploader::object_size(const std::string& url) {
  const Response r = impl_->run(Request{.url = url, .head = true});
  if (no_such_key(url, r)) return std::nullopt;
  if (!r.ok()) throw Error(r.error);
  return r.object_size;
}

std::optional<std::string> Uploader::get_text(const std::string& url) {
  const Response r = impl_->run(Request{.url = url});
  if (no_such_key(url, r)) return std::nullopt;
  if (!r.ok()) throw Error(r.error);
  return r.body;
}

}  // namespace sluice::remote
