#include "sluice/remote/s3_listing.h"

#include <fnmatch.h>

#include <algorithm>

#include "sluice/error.h"
#include "sluice/remote/url.h"
#include "xml_text.h"

namespace sluice::remote {
namespace {


bool has_wildcard(const std::string& s) { return s.find_first_of("*?[") != std::string::npos; }

std::vector<std::string> segments(const std::string& path) {
  std::vector<std::string> out;
  std::size_t at = 0;
  for (;;) {
    const std::size_t slash = path.find('/', at);
    out.push_back(path.substr(at, slash == std::string::npos ? std::string::npos : slash - at));
    if (slash == std::string::npos) return out;
    at = slash + 1;
  }
}

// Glob matching as io::glob's (sluice/io/glob.h), over '/'-separated parts:
// fnmatch per part, a leading '.' only matched explicitly, and "**" as a
// whole part for zero or more parts.
bool matches(const std::vector<std::string>& pattern, std::size_t p, const std::vector<std::string>& key,
             std::size_t k) {
  if (p == pattern.size()) return k == key.size();
  if (pattern[p] == "**") {
    for (std::size_t skip = k; skip <= key.size(); ++skip) {
      if (skip > k && !key[skip - 1].empty() && key[skip - 1][0] == '.') break;
      if (matches(pattern, p + 1, key, skip)) return true;
    }
    return false;
  }
  return k < key.size() && ::fnmatch(pattern[p].c_str(), key[k].c_str(), FNM_PERIOD) == 0 &&
         matches(pattern, p + 1, key, k + 1);
}

}  // namespace

std::vector<ObjectInfo> list_objects(const std::string& bucket, const std::string& prefix,
                                     const TransferOptions& options, ListLimits limits) {
  std::vector<ObjectInfo> out;
  std::string token;
  for (std::uint64_t page = 0;; ++page) {
    if (page == limits.max_pages)
      throw Error("listing s3://" + bucket + "/" + prefix + " takes more than " + std::to_string(page) + " pages");
    Request request;
    request.url = "s3://" + bucket + "/";
    // Parameters in SigV4's canonical order (sorted by name).
    if (!token.empty()) request.query = "continuation-token=" + uri_encode(token, false) + "&";
    if (limits.one_level) request.query += "delimiter=%2F&";
    request.query += "list-type=2&prefix=" + uri_encode(prefix, false);
    const Response r = fetch(request, options);
    if (limits.requests != nullptr) ++*limits.requests;
    if (!r.ok()) throw Error("cannot list s3://" + bucket + "/" + prefix + ": " + r.error);
    if (r.body.find("<ListBucketResult") == std::string::npos)
      throw Error("cannot list s3://" + bucket + "/" + prefix + ": the store's answer is not a ListBucketResult");
    for (std::string_view item : detail::xml_elements(r.body, "Contents")) {
      ObjectInfo info;
      info.key = detail::xml_text(item, "Key");
      info.size = std::strtoull(detail::xml_text(item, "Size").c_str(), nullptr, 10);
      info.etag = detail::xml_text(item, "ETag");
      out.push_back(std::move(info));
    }
    const bool truncated = detail::xml_text(r.body, "IsTruncated") == "true";
    token = detail::xml_text(r.body, "NextContinuationToken");
    if (!truncated) break;
    if (token.empty())
      throw Error("cannot list s3://" + bucket + "/" + prefix + ": a truncated page without NextContinuationToken");
  }
  return out;
}

std::vector<std::string> expand_remote(const std::string& pattern, const TransferOptions& options) {
  std::vector<std::string> out;
  for (const std::string& name : expand_braces(pattern)) {
    if (!has_wildcard(name)) {
      parse_url(name);  // a bad URL fails here, before any request
      out.push_back(name);
      continue;
    }
    const Url url = parse_url(name);
    if (url.scheme != Scheme::s3)
      throw Error("'" + name + "': wildcards need a listing, which only s3:// has; name http(s) shards with {A..B}");
    const std::string prefix = url.key().substr(0, url.key().find_first_of("*?["));
    const std::vector<std::string> pattern = segments(url.key());
    std::vector<std::string> matched;
    for (const ObjectInfo& o : list_objects(url.bucket(), prefix, options))
      if (matches(pattern, 0, segments(o.key), 0)) matched.push_back("s3://" + url.bucket() + "/" + o.key);
    if (matched.empty()) throw Error("no object matches " + name);
    std::sort(matched.begin(), matched.end());
    out.insert(out.end(), matched.begin(), matched.end());
  }
  return out;
}

}  // namespace sluice::remote
