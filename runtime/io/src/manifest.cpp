#include "sluice/io/manifest.h"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>

#include "json.h"
#include "output_file.h"
#include "sluice/error.h"
#include "sluice/io/atomic_file.h"

namespace sluice::io {
namespace {

using sluice::detail::append_json_string;
using sluice::detail::JsonValue;

void key(std::string& out, const char* name) {
  append_json_string(out, name);
  out += ": ";
}

std::string path_in(const std::string& dir, const std::string& name) {
  return (std::filesystem::path(dir) / name).string();
}

}  // namespace

std::uint64_t Manifest::samples() const {
  std::uint64_t n = 0;
  for (const auto& s : shards) n += s.samples;
  return n;
}

std::uint64_t Manifest::bytes() const {
  std::uint64_t n = 0;
  for (const auto& s : shards) n += s.bytes;
  return n;
}

std::string Manifest::to_json() const {
  std::string o = "{";
  key(o, "format"); o += "\"sluice-dataset\", ";
  key(o, "version"); o += "1, ";
  key(o, "shard_format"); append_json_string(o, shard_format); o += ", ";
  key(o, "checksum"); append_json_string(o, checksum); o += ", ";
  key(o, "complete"); o += complete ? "true, " : "false, ";
  key(o, "samples"); o += std::to_string(samples()) + ", ";
  key(o, "cut");
  o += cut_samples ? "{\"samples\": " + std::to_string(cut_samples) + "}, "
                   : "{\"bytes\": " + std::to_string(cut_bytes) + "}, ";
  key(o, "resume");
  o += "{\"batch\": " + std::to_string(resume_batch) + ", \"row\": " + std::to_string(resume_row) + "},\n";
  if (!plan.empty()) {
    key(o, "plan"); o += "{";
    bool first = true;
    for (const auto& [name, value] : plan) {
      o += first ? "" : ", ";
      first = false;
      key(o, name.c_str()); append_json_string(o, value);
    }
    o += "},\n";
  }
  key(o, "fields"); o += "[";
  for (std::size_t i = 0; i < fields.size(); ++i) {
    const auto& f = fields[i];
    o += i ? ",\n  {" : "\n  {";
    key(o, "name"); append_json_string(o, f.name); o += ", ";
    key(o, "dtype"); append_json_string(o, f.dtype); o += ", ";
    key(o, "shape"); o += "[";
    for (std::size_t d = 0; d < f.shape.size(); ++d) o += (d ? ", " : "") + std::to_string(f.shape[d]);
    o += "], ";
    key(o, "ext"); append_json_string(o, f.ext); o += "}";
  }
  o += "],\n";
  key(o, "shards"); o += "[";
  for (std::size_t i = 0; i < shards.size(); ++i) {
    const auto& s = shards[i];
    o += i ? ",\n  {" : "\n  {";
    key(o, "name"); append_json_string(o, s.name); o += ", ";
    key(o, "samples"); o += std::to_string(s.samples) + ", ";
    key(o, "bytes"); o += std::to_string(s.bytes) + ", ";
    key(o, "checksum"); append_json_string(o, s.checksum); o += "}";
  }
  o += "]}\n";
  return o;
}

Manifest Manifest::from_json(const std::string& text, const std::string& where) {
  try {
    const JsonValue v = sluice::detail::parse_json(text);
    if (v.at("format").as_string("format") != "sluice-dataset")
      throw Error("\"format\" is not \"sluice-dataset\"");
    if (v.at("version").as_u64("version") != 1) throw Error("unknown \"version\" (this Sluice reads 1)");
    Manifest m;
    m.shard_format = v.at("shard_format").as_string("shard_format");
    if (m.shard_format != "tar" && m.shard_format != "tfrecord")
      throw Error("unknown shard_format '" + m.shard_format + "'");
    m.checksum = v.at("checksum").as_string("checksum");
    if (m.checksum != "xxh3") throw Error("unknown checksum '" + m.checksum + "' (this Sluice knows xxh3)");
    m.complete = v.at("complete").as_bool("complete");
    const JsonValue& cut = v.at("cut");
    if (const JsonValue* n = cut.find("samples")) m.cut_samples = n->as_u64("cut.samples");
    if (const JsonValue* n = cut.find("bytes")) m.cut_bytes = n->as_u64("cut.bytes");
    const JsonValue& resume = v.at("resume");
    m.resume_batch = resume.at("batch").as_u64("resume.batch");
    m.resume_row = resume.at("row").as_u64("resume.row");
    if (const JsonValue* plan = v.find("plan")) {
      if (plan->kind != JsonValue::object) throw Error("\"plan\" is not an object");
      for (const auto& [name, value] : plan->members) m.plan[name] = value.as_string("plan." + name);
    }
    for (const JsonValue& f : v.at("fields").as_array("fields")) {
      ManifestField field;
      field.name = f.at("name").as_string("fields[].name");
      field.dtype = f.at("dtype").as_string("fields[].dtype");
      for (const JsonValue& d : f.at("shape").as_array("fields[].shape"))
        field.shape.push_back(static_cast<std::int64_t>(d.as_u64("fields[].shape[]")));
      field.ext = f.at("ext").as_string("fields[].ext");
      m.fields.push_back(std::move(field));
    }
    for (const JsonValue& s : v.at("shards").as_array("shards")) {
      ManifestShard shard;
      shard.name = s.at("name").as_string("shards[].name");
      if (shard.name.empty() || shard.name.find('/') != std::string::npos || shard.name == "." ||
          shard.name == "..")
        throw Error("shard name '" + shard.name + "' is not a file name in the dataset folder");
      shard.samples = s.at("samples").as_u64("shards[].samples");
      shard.bytes = s.at("bytes").as_u64("shards[].bytes");
      shard.checksum = s.at("checksum").as_string("shards[].checksum");
      m.shards.push_back(std::move(shard));
    }
    return m;
  } catch (const Error& e) {
    throw Error("manifest " + where + ": " + e.what());
  }
}

std::optional<Manifest> read_manifest(const std::string& dir) {
  const std::string path = path_in(dir, kManifestName);
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (!std::filesystem::exists(path)) return std::nullopt;
    throw Error("cannot read manifest " + path);
  }
  std::ostringstream text;
  text << in.rdbuf();
  return Manifest::from_json(text.str(), path);
}

void write_manifest(const std::string& dir, const Manifest& manifest) {
  write_file_atomically(path_in(dir, kManifestName), manifest.to_json());
}

std::string check_shard_file(const std::string& path, const ManifestShard& shard, const std::string& name) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return name + " is missing (listed in the manifest)";
  if (static_cast<std::uint64_t>(st.st_size) != shard.bytes)
    return name + " has " + std::to_string(st.st_size) + " bytes; the manifest says " + std::to_string(shard.bytes);
  const std::string sum = detail::file_checksum(path);
  if (sum != shard.checksum) return name + ": checksum " + sum + " does not match the manifest's " + shard.checksum;
  return "";
}

std::string check_shard(const std::string& dir, const ManifestShard& shard) {
  const std::string path = path_in(dir, shard.name);
  return check_shard_file(path, shard, path);
}

void verify_listed_shard(const std::string& shard_path) {
  static std::mutex mutex;
  static std::set<std::string> verified;
  {
    std::lock_guard lock(mutex);
    if (verified.count(shard_path)) return;
  }
  const std::filesystem::path p(shard_path);
  const std::string dir = p.has_parent_path() ? p.parent_path().string() : ".";
  std::optional<Manifest> manifest;
  try {
    manifest = read_manifest(dir);
  } catch (const Error&) {
    return;  // a file named manifest.json that is not ours: nothing to check against
  }
  if (!manifest) return;
  const std::string name = p.filename().string();
  for (const ManifestShard& shard : manifest->shards) {
    if (shard.name != name) continue;
    std::string why = check_shard(dir, shard);
    if (!why.empty()) throw Error("corrupt shard: " + why + " (sluice verify " + dir + " checks them all)");
    break;
  }
  std::lock_guard lock(mutex);
  verified.insert(shard_path);
}

}  // namespace sluice::io
