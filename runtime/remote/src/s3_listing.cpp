#include "sluice/remote/s3_listing.h"

#include <fnmatch.h>

#include <algorithm>

#include "sluice/error.h"
#include "sluice/remote/url.h"
#include "xml_text.h"

namespace sluice::remote {
namespace {


bool has_wildcard(const std::string& s) { return s.find_first_of("*?[") != std::string::npos; }

}  // namespace

std::vector<ObjectInfo> list_objects(const std::string& bucket, const std::string& prefix,
                                     const TransferOptions& options) {
  std::vector<ObjectInfo> out;
  std::string token;
  for (int page = 0;; ++page) {
    Request request;
    request.url = "s3://" + bucket + "/";
    // Parameters in SigV4's canonical order (sorted by name).
    if (!token.empty()) request.query = "continuation-token=" + uri_encode(token, false) + "&";
    request.query += "list-type=2&prefix=" + uri_encode(prefix, false);
    const Response r = fetch(request, options);
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
    std::vector<std::string> matched;
    for (const ObjectInfo& o : list_objects(url.bucket(), prefix, options))
      if (::fnmatch(url.key().c_str(), o.key.c_str(), FNM_PATHNAME) == 0)
        matched.push_back("s3://" + url.bucket() + "/" + o.key);
    if (matched.empty()) throw Error("no object matches " + name);
    std::sort(matched.begin(), matched.end());
    out.insert(out.end(), matched.begin(), matched.end());
  }
  return out;
}

}  // namespace sluice::remote
