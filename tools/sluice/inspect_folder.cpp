#include "inspect_folder.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>
#include <vector>

#include "sluice/error.h"
#include "sluice/io/file_source.h"
#include "sluice/ops/decode.h"

namespace sluice::cli {
namespace {

// Whether the file starts as a JPEG or PNG does (a file that cannot be read is not one).
bool is_image(const std::string& path) {
  char head[8] = {};
  std::ifstream in(path, std::ios::binary);
  in.read(head, sizeof head);
  return ops::image_format(head, static_cast<std::size_t>(in.gcount())).has_value();
}

// Regular files directly in `root`: sluice.folders reads only class sub-folders.
std::vector<std::string> loose_files(const std::string& root) {
  namespace fs = std::filesystem;
  std::vector<std::string> loose;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(root, ec)) {
    std::error_code fe;
    const std::string name = e.path().filename().string();
    if (!name.starts_with(".") && e.is_regular_file(fe)) loose.push_back(e.path().string());
  }
  std::sort(loose.begin(), loose.end());
  return loose;
}

constexpr std::size_t kShow = 10;  // names listed of each kind

void print_names(const char* what, const std::vector<std::string>& names) {
  if (names.empty()) return;
  std::printf("  %s: %zu\n", what, names.size());
  for (std::size_t i = 0; i < names.size() && i < kShow; ++i) std::printf("    %s\n", names[i].c_str());
  if (names.size() > kShow) std::printf("    ... and %zu more\n", names.size() - kShow);
}

}  // namespace

void inspect_folder(const std::string& root) {
  // The listing sluice.folders makes: the classes and files the pipeline sees.
  const auto source = io::FileSource::from_folders(root);
  const std::vector<std::string>& classes = source->classes();
  std::vector<std::uint64_t> counts(classes.size(), 0);
  std::vector<std::string> not_images;
  for (std::uint64_t id = 0; id < source->size(); ++id) {
    ++counts[static_cast<std::size_t>(source->label(id))];
    const std::string& path = source->files()[id];
    if (!is_image(path)) not_images.push_back(path);
  }
  std::printf("%s: image folder (sluice.folders), %zu classes, %llu files\n", root.c_str(), classes.size(),
              static_cast<unsigned long long>(source->size()));
  std::printf("  %-6s %-24s %s\n", "label", "class", "files");
  for (std::size_t c = 0; c < classes.size(); ++c) {
    std::printf("  %-6zu %-24s %llu%s\n", c, classes[c].c_str(), static_cast<unsigned long long>(counts[c]),
                counts[c] == 0 ? "  (empty)" : "");
  }
  if (!not_images.empty() && not_images.size() == source->size()) {
    // Likely a folder of data files (Parquet, shards, JSON lines), not of images.
    std::printf("  no file here is an image: a folder of data files is read by the source of their format; "
                "`sluice inspect FILE` shows one (%s)\n", not_images.front().c_str());
  }
  print_names("not JPEG or PNG (sluice.image refuses them; extensions = {...} leaves them out)", not_images);
  print_names("outside any class folder (left out)", loose_files(root));
}

}  // namespace sluice::cli
