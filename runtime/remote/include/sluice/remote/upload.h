// sluice/remote/upload.h: local files into an S3 store or onto a web server
// that takes PUT (WebDAV: nginx's dav_methods, Apache's mod_dav, a presigned
// or token-guarded HTTP endpoint), what `sluice write --to s3://... |
// https://...` publishes its shards with.
//
//   Uploader up;                                       // blocking, on a loop of its own
//   up.put_file("/staging/shard-000000.tar", "s3://b/p/shard-000000.tar");
//   up.put_text(manifest_json, "s3://b/p/manifest.json");
//   up.object_size("s3://b/p/shard-000000.tar")      // nullopt when there is none
//
// To http(s)://, every object goes up in one PUT (no multipart there; the
// server should publish it whole, as nginx's and Apache's DAV modules do by
// writing to a temporary file and renaming it), with the transport's headers
// (no signing); a 404 to a HEAD or GET means absent. To s3://, a file below
// multipart_threshold goes up in one PUT. From it on, as S3 multipart upload: CreateMultipartUpload, then UploadPart of part_size bytes
// (the last part shorter) with up to TransferOptions::max_in_flight parts in
// flight, then CompleteMultipartUpload with every part's ETag. When a part or
// the completion fails, the upload is aborted (AbortMultipartUpload, so the
// store drops the parts; best effort: a failed abort is added to the error).
// S3 wants parts of at least 5 MiB but the last: part_size is raised to that.
// The object appears whole or not at all (S3 publishes a PUT or a completed
// upload atomically).
//
// Retries are the transfer engine's (transfer.h): resets, 5xx, 429 and
// stalls, after a backoff; each retried request sends its whole body again.
// A CompleteMultipartUpload answered 200 with an <Error> document (S3 does
// that for a failure after it began answering) is an error too.
//
// Errors: sluice::Error naming the URL, the HTTP status and the store's code
// and message: "s3://b/p/x.tar: HTTP 403 (InvalidAccessKeyId: ...)".
// Thread and fork safety: one thread at a time uses an Uploader (its loop
// and curl handles are not shared; moving it between threads needs a
// happens-before, such as a join); make it after fork().
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "sluice/remote/transfer.h"

namespace sluice::remote {

inline constexpr std::uint64_t kMinPartSize = 5ull << 20;  // S3's smallest part but the last

struct UploadOptions {
  TransferOptions transfer{};
  // SLUICE_S3_MULTIPART_THRESHOLD and SLUICE_S3_PART_SIZE (bytes) override
  // the defaults (64 MiB, 16 MiB), so that tests can take the multipart path
  // with small files; a bad value throws sluice::Error naming the variable.
  std::uint64_t multipart_threshold = from_environment("SLUICE_S3_MULTIPART_THRESHOLD", 64ull << 20);
  std::uint64_t part_size = from_environment("SLUICE_S3_PART_SIZE", 16ull << 20);

  static std::uint64_t from_environment(const char* name, std::uint64_t otherwise);
};

class Uploader {
 public:
  explicit Uploader(UploadOptions options = {});
  ~Uploader();
  Uploader(const Uploader&) = delete;
  Uploader& operator=(const Uploader&) = delete;

  // Uploads the whole of `path` as `url`. Throws sluice::Error.
  void put_file(const std::string& path, const std::string& url);
  // Uploads `text` as `url` in one PUT. Throws sluice::Error.
  void put_text(const std::string& text, const std::string& url);
  // The object's size; nullopt when the store answers 404 NoSuchKey. Any
  // other failure (an unknown bucket, a refused key) throws.
  std::optional<std::uint64_t> object_size(const std::string& url);
  // The object's bytes (at most 64 MiB); nullopt when it is absent (404 NoSuchKey).
  std::optional<std::string> get_text(const std::string& url);

  const UploadOptions& options() const;
  std::uint64_t multipart_uploads() const;  // uploads that took the multipart path

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Throws sluice::Error unless `url` is an s3://, http:// or https:// URL.
void check_writable(const std::string& url);

}  // namespace sluice::remote
