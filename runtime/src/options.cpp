#include "sluice/options.h"

namespace sluice {

const char* name_of(ShardPolicy p) { return p == ShardPolicy::drop ? "drop" : "pad"; }
const char* name_of(OnError e) { return e == OnError::skip ? "skip" : "fail"; }
const char* name_of(SkipFill f) { return f == SkipFill::repeat ? "repeat" : "shrink"; }

std::optional<ShardPolicy> parse_shard_policy(std::string_view name) {
  if (name == "pad") return ShardPolicy::pad;
  if (name == "drop") return ShardPolicy::drop;
  return std::nullopt;
}

std::optional<OnError> parse_on_error(std::string_view name) {
  if (name == "fail") return OnError::fail;
  if (name == "skip") return OnError::skip;
  return std::nullopt;
}

std::optional<SkipFill> parse_skip_fill(std::string_view name) {
  if (name == "shrink") return SkipFill::shrink;
  if (name == "repeat") return SkipFill::repeat;
  return std::nullopt;
}

}  // namespace sluice
