// sluice/remote/s3_listing.h: the objects under an S3 prefix, and remote
// shard patterns expanded into URLs.
//
//   list_objects("bucket", "train/", options)       -> every key under train/
//   expand_remote("s3://b/train/*.tar", options)    -> the matching s3:// URLs, sorted
//   expand_remote("https://h/t-{0..3}.tar", options) -> four URLs, no request made
//
// list_objects sends ListObjectsV2 (GET /?list-type=2&prefix=...), following
// NextContinuationToken until IsTruncated is false. expand_remote expands
// WebDataset braces (url.h) first, then, for s3:// names holding * ? or [,
// lists the prefix before the first wildcard and keeps the keys that match
// as local globs do (sluice/io/glob.h): fnmatch per '/'-separated part, a
// leading '.' matched only explicitly, "**" for zero or more parts.
//
// Errors: sluice::Error naming the URL, the status and the store's message
// (403, an unknown bucket: "NoSuchBucket"); a pattern that matches nothing
// ("no object matches s3://b/x/*.tar"); a wildcard in an http(s) URL (HTTP
// has no listing).
// Thread safety: each call runs its own loop; reentrant.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sluice/remote/transfer.h"

namespace sluice::remote {

struct ObjectInfo {
  std::string key;
  std::uint64_t size = 0;
  std::string etag;
};

// How list_objects walks: every key under the prefix, or (one_level) only
// those not in a deeper "folder" (delimiter '/'); at most max_pages pages of
// 1,000 keys (an Error past them); *requests (when given) counts the pages
// asked for, retries not included.
struct ListLimits {
  bool one_level = false;
  std::uint64_t max_pages = UINT64_MAX;
  std::uint64_t* requests = nullptr;
};

std::vector<ObjectInfo> list_objects(const std::string& bucket, const std::string& prefix,
                                     const TransferOptions& options, ListLimits limits = {});

std::vector<std::string> expand_remote(const std::string& pattern, const TransferOptions& options);

}  // namespace sluice::remote
