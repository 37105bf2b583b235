// sluice/remote/url.h: where a shard lives: a local path, s3://bucket/key,
// https://host/path or http://host/path, and WebDataset's brace ranges.
//
//   is_remote("s3://b/k")                 -> true
//   parse_url("s3://b/a/x.tar")           -> {s3, bucket "b", key "a/x.tar"}
//   expand_braces("s3://b/t-{00..02}.tar") -> s3://b/t-00.tar, t-01.tar, t-02.tar
//
// Brace forms: {A..B} with decimal A <= B (zero-padded to A's width when A
// has a leading zero or A and B have the same width), {x,y,z} alternatives;
// several braces expand as their product, left to right, in order.
//
// Errors: parse_url and expand_braces throw sluice::Error naming the text
// (no bucket, an unknown scheme, an unbalanced brace, a range of more than
// 10,000,000 names or one running backwards).
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::remote {

enum class Scheme { http, https, s3 };

struct Url {
  Scheme scheme = Scheme::https;
  std::string text;    // as given
  std::string host;    // http(s): host[:port]; s3: the bucket
  std::string path;    // http(s): "/a/b" (with any query); s3: the key, no leading '/'
  const std::string& bucket() const { return host; }
  const std::string& key() const { return path; }
};

// Whether `path` names a remote object (s3://, http://, https://).
bool is_remote(std::string_view path);

// Throws sluice::Error "bad URL 'TEXT': why".
Url parse_url(const std::string& text);

// Every name `pattern` stands for, in order; a pattern without braces is itself.
std::vector<std::string> expand_braces(const std::string& pattern);

// Percent-encoding as AWS Signature V4 wants it: every byte but A-Z a-z 0-9
// - _ . ~ (and '/' when keep_slash, for an object key in a path).
std::string uri_encode(std::string_view text, bool keep_slash);

// The last '/'-separated part of a URL's path ("x.tar" for s3://b/a/x.tar).
std::string base_name(const Url& url);

}  // namespace sluice::remote
