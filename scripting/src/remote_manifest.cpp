#include "remote_manifest.h"

#include <map>
#include <memory>

#include "sluice/error.h"
#include "sluice/io/manifest.h"

namespace sluice::scripting {

namespace {

// "s3://b/ds/shard-000000.tar" -> "s3://b/ds/" (a query string is not part of the folder).
std::string folder_of(const std::string& url) {
  const std::string path = url.substr(0, url.find('?'));
  const std::size_t scheme = path.find("://");
  const std::size_t slash = path.rfind('/');
  if (slash == std::string::npos || (scheme != std::string::npos && slash < scheme + 3)) return "";
  return path.substr(0, slash + 1);
}

}  // namespace

std::function<std::string(const std::string&, const std::string&)> remote_manifest_check(
    const std::vector<std::string>& urls, const remote::TransferOptions& transfer) {
  std::map<std::string, std::string> folders;  // folder -> the first URL given in it
  for (const std::string& url : urls)
    if (std::string folder = folder_of(url); !folder.empty()) folders.try_emplace(std::move(folder), url);
  auto listed = std::make_shared<std::map<std::string, io::ManifestShard>>();  // URL -> its entry
  for (const auto& [folder, first] : folders) {
    const std::string where = folder + io::kManifestName;
    const remote::Response r = remote::fetch({.url = where}, transfer);
    if (!r.ok()) {
      if (r.status >= 400 && r.status < 500) continue;
      // Named by what the user gave: the manifest is only looked for.
      throw Error(first + ": cannot reach the store: " + r.error + " (the first request, for the " +
                  io::kManifestName + " that sluice write leaves beside its shards; a data set needs none)");
    }
    io::Manifest manifest;
    try {
      manifest = io::Manifest::from_json(r.body, where);
    } catch (const Error&) {
      continue;  // a manifest.json that is not ours: nothing to check against
    }
    for (const io::ManifestShard& shard : manifest.shards) (*listed)[folder + shard.name] = shard;
  }
  if (listed->empty()) return {};
  return [listed](const std::string& url, const std::string& path) -> std::string {
    const auto it = listed->find(url.substr(0, url.find('?')));
    if (it == listed->end()) return "";
    try {
      const std::string why = io::check_shard_file(path, it->second, url);
      return why.empty() ? "" : "corrupt shard: " + why + " (its folder's " + io::kManifestName + ")";
    } catch (const std::exception& e) {
      return url + ": cannot check it against its folder's manifest: " + e.what();
    }
  };
}

}  // namespace sluice::scripting
