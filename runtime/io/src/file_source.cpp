#include "sluice/io/file_source.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <system_error>

#include "sluice/error.h"
#include "sluice/io/glob.h"

namespace sluice::io {
namespace {

std::string lower_extension(const std::filesystem::path& p) {
  std::string ext = p.extension().string();
  if (!ext.empty() && ext[0] == '.') ext.erase(0, 1);
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext;
}

bool hidden(const std::filesystem::path& p) {
  std::string name = p.filename().string();
  return !name.empty() && name[0] == '.';
}

}  // namespace

FileSource::FileSource(std::vector<std::string> paths, std::vector<std::int32_t> labels,
                       std::vector<std::string> classes)
    : paths_(std::move(paths)), labels_(std::move(labels)), classes_(std::move(classes)) {}

std::shared_ptr<FileSource> FileSource::from_list(std::vector<std::string> paths) {
  return std::shared_ptr<FileSource>(new FileSource(std::move(paths), {}, {}));
}

std::shared_ptr<FileSource> FileSource::from_glob(const std::string& pattern) {
  std::vector<std::string> paths = glob(pattern);
  if (paths.empty()) throw Error("glob " + pattern + ": no file matches");
  return from_list(std::move(paths));
}

std::shared_ptr<FileSource> FileSource::from_folders(const std::string& root,
                                                     const FolderOptions& options) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(root, ec)) throw Error("image folder " + root + ": not a directory");
  std::vector<std::string> classes;
  for (const fs::directory_entry& e : fs::directory_iterator(root, ec)) {
    std::error_code de;
    if (e.is_directory(de) && !hidden(e.path())) classes.push_back(e.path().filename().string());
  }
  if (ec) throw Error("image folder " + root + ": " + ec.message());
  if (classes.empty()) throw Error("image folder " + root + ": no class sub-folders");
  std::sort(classes.begin(), classes.end());

  std::vector<std::string> paths;
  std::vector<std::int32_t> labels;
  for (std::size_t c = 0; c < classes.size(); ++c) {
    std::vector<std::string> in_class;
    const fs::path dir = fs::path(root) / classes[c];
    for (fs::recursive_directory_iterator it(dir, fs::directory_options::follow_directory_symlink,
                                             ec),
         end;
         it != end; it.increment(ec)) {
      if (ec) throw Error("image folder " + dir.string() + ": " + ec.message());
      if (hidden(it->path())) {
        if (it->is_directory()) it.disable_recursion_pending();
        continue;
      }
      std::error_code fe;
      if (!it->is_regular_file(fe)) continue;
      if (!options.extensions.empty() &&
          std::find(options.extensions.begin(), options.extensions.end(),
                    lower_extension(it->path())) == options.extensions.end())
        continue;
      in_class.push_back(it->path().string());
    }
    std::sort(in_class.begin(), in_class.end());
    for (std::string& p : in_class) {
      paths.push_back(std::move(p));
      labels.push_back(static_cast<std::int32_t>(c));
    }
  }
  return std::shared_ptr<FileSource>(
      new FileSource(std::move(paths), std::move(labels), std::move(classes)));
}

SampleLocation FileSource::locate(std::uint64_t id) const {
  SampleLocation where;
  where.id = id;
  where.file = static_cast<std::uint32_t>(id);
  where.whole_file = true;
  return where;
}

void FileSource::decode(const SampleLocation& where, std::span<const std::byte> raw,
                        Sample& out) const {
  out.reset(where.id, paths_[where.file], {}, label(where.id), 0, 0);
  out.fields.push_back({"data", raw});
}

}  // namespace sluice::io
