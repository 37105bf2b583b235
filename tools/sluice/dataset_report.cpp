#include "dataset_report.h"

#include <cstdio>
#include <filesystem>

#include "sluice/error.h"
#include "sluice/io/atomic_file.h"
#include "sluice/io/manifest.h"

#include <algorithm>
#include <initializer_list>
#include <set>
#include <string_view>
#include <vector>
#include <optional>

namespace sluice::cli {
namespace {

io::Manifest load(const std::string& dir) {
  std::optional<io::Manifest> m = io::read_manifest(dir);
  if (!m) throw Error(dir + " has no " + io::kManifestName);
  return std::move(*m);
}

std::string shape_text(const io::ManifestField& f) {
  if (f.dtype == "bytes") return "bytes";
  std::string s = f.dtype + "[";
  for (std::size_t d = 0; d < f.shape.size(); ++d) s += (d ? "," : "") + std::to_string(f.shape[d]);
  return s + "]";
}

bool ends_with_any(const std::string& name, std::initializer_list<std::string_view> ends) {
  for (std::string_view e : ends)
    if (name.ends_with(e)) return true;
  return false;
}

// Files in `dir` that look like shards (or their indexes) but that the
// manifest does not list: a reader's glob (sluice.tar{"DIR/*.tar"}) would
// read them too. What a stopped conversion leaves is not counted while the
// manifest is incomplete (running it again removes it): its *.tmp files, and
// the next shard (with its index), renamed but not yet listed when it stopped.
std::vector<std::string> unlisted_files(const std::string& dir, const io::Manifest& m, std::size_t& leftovers) {
  std::set<std::string> known{io::kManifestName};
  for (const io::ManifestShard& s : m.shards) {
    known.insert(s.name);
    known.insert(s.name + ".idx");  // its index, tar or TFRecord (shard_writer.h)
  }
  char next[40];
  std::snprintf(next, sizeof next, "shard-%06zu.%s", m.shards.size(), m.shard_format.c_str());
  std::vector<std::string> out;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (known.count(name) || entry.is_directory()) continue;
    const bool manifest_tmp = io::is_atomic_temporary(name, io::kManifestName);
    // What a writer stopped mid-shard leaves: the next shard, its index, or
    // either's atomic temporary (FILE.tmpPID.N).
    const std::string next_idx = std::string(next) + ".idx";
    const bool left = name.ends_with(".tmp") || manifest_tmp || name == next || name == next_idx ||
                      io::is_atomic_temporary(name, next) || io::is_atomic_temporary(name, next_idx);
    if (!m.complete && left) {
      ++leftovers;
      continue;
    }
    if (name.starts_with("shard-") || manifest_tmp || ends_with_any(name, {".tar", ".tfrecord", ".idx", ".tmp", ".tar.gz"}))
      out.push_back(name);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

bool is_written_dataset(const std::string& dir) {
  std::error_code ec;
  return std::filesystem::is_regular_file(std::filesystem::path(dir) / io::kManifestName, ec);
}

void inspect_dataset(const std::string& dir) {
  const io::Manifest m = load(dir);
  std::printf("%s: a written dataset (%s), %zu %s shards, %llu samples, %.1f MB, %s\n", dir.c_str(),
              io::kManifestName, m.shards.size(), m.shard_format.c_str(),
              static_cast<unsigned long long>(m.samples()), static_cast<double>(m.bytes()) / 1e6,
              m.complete ? "complete" : "INCOMPLETE (a conversion stopped; run it again to finish)");
  if (m.cut_samples)
    std::printf("  shards of %llu samples", static_cast<unsigned long long>(m.cut_samples));
  else
    std::printf("  shards of at most %llu bytes", static_cast<unsigned long long>(m.cut_bytes));
  std::printf(", checksums %s\n", m.checksum.c_str());
  std::printf("  %-16s %-22s %s\n", "field", "dtype[shape]", m.shard_format == "tar" ? "member" : "feature");
  for (const io::ManifestField& f : m.fields)
    std::printf("  %-16s %-22s %s\n", f.name.c_str(), shape_text(f).c_str(),
                m.shard_format == "tar" ? ("KEY." + f.ext).c_str() : f.name.c_str());
  const std::size_t show = std::min<std::size_t>(m.shards.size(), 3);
  for (std::size_t i = 0; i < show; ++i)
    std::printf("  %s  %llu samples, %llu bytes, %s\n", m.shards[i].name.c_str(),
                static_cast<unsigned long long>(m.shards[i].samples),
                static_cast<unsigned long long>(m.shards[i].bytes), m.shards[i].checksum.c_str());
  if (m.shards.size() > show) std::printf("  ... and %zu more shards\n", m.shards.size() - show);
}

int verify_dataset(const std::string& dir) {
  const io::Manifest m = load(dir);
  std::size_t bad = 0;
  for (const io::ManifestShard& s : m.shards) {
    const std::string why = io::check_shard(dir, s);
    if (why.empty()) continue;
    ++bad;
    std::printf("%s\n", why.c_str());
  }
  std::size_t leftovers = 0;
  const std::vector<std::string> stray = unlisted_files(dir, m, leftovers);
  for (const std::string& name : stray)
    std::printf("%s: not in the manifest (a reader of %s/*.%s would read it too; move it out or delete it)\n",
                (std::filesystem::path(dir) / name).c_str(), dir.c_str(), m.shard_format.c_str());
  if (bad) std::printf("%zu of %zu shards do not match %s/%s\n", bad, m.shards.size(), dir.c_str(), io::kManifestName);
  if (!stray.empty())
    std::printf("%zu %s in %s not listed in its %s\n", stray.size(), stray.size() == 1 ? "file" : "files",
                dir.c_str(), io::kManifestName);
  if (bad || !stray.empty()) return 1;
  std::printf("%s: all %zu shards match the manifest (%llu samples%s)\n", dir.c_str(), m.shards.size(),
              static_cast<unsigned long long>(m.samples()), m.complete ? "" : "; the conversion is not complete");
  if (leftovers)
    std::printf("  and %zu %s a stopped conversion left (running it again removes them)\n", leftovers,
                leftovers == 1 ? "file" : "files");
  return m.complete ? 0 : 1;
}

}  // namespace sluice::cli
