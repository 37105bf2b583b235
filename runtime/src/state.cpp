#include "sluice/state.h"

#include "json.h"
#include "sluice/error.h"

namespace sluice {

namespace {

void append_list(std::string& out, const std::vector<std::uint64_t>& v) {
  out += '[';
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i) out += ',';
    out += std::to_string(v[i]);
  }
  out += ']';
}

std::vector<std::uint64_t> read_list(const detail::JsonValue& v, std::string_view what) {
  std::vector<std::uint64_t> out;
  for (const detail::JsonValue& item : v.as_array(what)) out.push_back(item.as_u64(what));
  return out;
}

}  // namespace

std::string LoaderState::to_json() const {
  std::string out = "{\"sluice_state\":1";
  auto field = [&](const char* key, const std::string& value) {
    out += ",\"";
    out += key;
    out += "\":";
    out += value;
  };
  field("seed", std::to_string(seed));
  field("dataset_size", std::to_string(dataset_size));
  field("batch_size", std::to_string(batch_size));
  field("shuffle", shuffle ? "true" : "false");
  field("drop_last", drop_last ? "true" : "false");
  field("rank", std::to_string(rank));
  field("world_size", std::to_string(world_size));
  std::string policy;
  detail::append_json_string(policy, shard_policy);
  field("shard_policy", policy);
  if (all_ranks) field("all_ranks", "true");
  field("epoch", std::to_string(epoch));
  field("batch", std::to_string(batch));
  out += ",\"delivered_ahead\":";
  append_list(out, delivered_ahead);
  out += ",\"skipped_samples\":";
  append_list(out, skipped_samples);
  out += "}";
  return out;
}

LoaderState LoaderState::from_json(std::string_view json) {
  try {
    detail::JsonValue v = detail::parse_json(json);
    if (v.at("sluice_state").as_u64("sluice_state") != 1) throw Error("unknown sluice_state version");
    LoaderState s;
    s.seed = v.at("seed").as_u64("seed");
    s.dataset_size = v.at("dataset_size").as_u64("dataset_size");
    s.batch_size = static_cast<std::uint32_t>(v.at("batch_size").as_u64("batch_size"));
    s.shuffle = v.at("shuffle").as_bool("shuffle");
    s.drop_last = v.at("drop_last").as_bool("drop_last");
    s.rank = static_cast<std::uint32_t>(v.at("rank").as_u64("rank"));
    s.world_size = static_cast<std::uint32_t>(v.at("world_size").as_u64("world_size"));
    s.shard_policy = v.at("shard_policy").as_string("shard_policy");
    if (const detail::JsonValue* all = v.find("all_ranks")) s.all_ranks = all->as_bool("all_ranks");
    s.epoch = v.at("epoch").as_u64("epoch");
    s.batch = v.at("batch").as_u64("batch");
    s.delivered_ahead = read_list(v.at("delivered_ahead"), "delivered_ahead");
    s.skipped_samples = read_list(v.at("skipped_samples"), "skipped_samples");
    return s;
  } catch (const Error& e) {
    throw Error(std::string("loader state: ") + e.what());
  }
}

}  // namespace sluice
