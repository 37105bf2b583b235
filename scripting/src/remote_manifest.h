// remote_manifest.h: a written dataset's checksums, for its shards in a store.
//
//   options.check = remote_manifest_check(urls, options.transfer);
//   remote::Cache cache(options);   // a listed shard whose bytes differ is never cached
//
// `sluice write --to s3://b/ds/` (and https://) leaves ds/manifest.json beside
// the shards (sluice/io/manifest.h). remote_manifest_check fetches the
// manifest of each folder the URLs lie in (one GET per folder; the launching
// process only) and returns the check the node cache runs on each download
// before publishing it (remote::CacheOptions::check): a URL its folder's
// manifest lists must have the listed size and checksum, else the download
// fails with "corrupt shard: URL: checksum ... does not match the manifest's
// ..." and nothing is cached. URLs no manifest lists pass. An empty function
// when no folder has a manifest.
//
// Absent manifests: a 4xx answer (404; 403 from an S3 bucket that hides
// absent keys from readers without list rights) or a document that is not a
// Sluice manifest means nothing to check, as for local folders. Errors: a
// store that fails otherwise (5xx after retries, unreachable) throws
// sluice::Error naming the manifest's URL.
// Fork: the function holds plain data (the listed shards), safe to copy into
// workers; it never throws (a failure to read the file is its reason).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "sluice/remote/transfer.h"

namespace sluice::scripting {

std::function<std::string(const std::string& url, const std::string& path)> remote_manifest_check(
    const std::vector<std::string>& urls, const remote::TransferOptions& transfer);

}  // namespace sluice::scripting
