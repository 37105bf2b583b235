#include "paths.h"

#include <glob.h>

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "sluice/error.h"

namespace sluice::cli {

std::vector<std::string> expand_paths(const std::string& pattern, std::string_view suffix) {
  std::vector<std::string> paths;
  std::error_code ec;
  if (pattern.find_first_of("*?[") != std::string::npos) {
    glob_t g{};
    const int rc = ::glob(pattern.c_str(), 0, nullptr, &g);
    for (std::size_t i = 0; rc == 0 && i < g.gl_pathc; ++i) paths.emplace_back(g.gl_pathv[i]);
    ::globfree(&g);
    if (paths.empty()) throw Error(pattern + ": no file matches");
  } else if (std::filesystem::is_directory(pattern, ec)) {
    for (const auto& entry : std::filesystem::directory_iterator(pattern, ec)) {
      const std::string name = entry.path().filename().string();
      if (entry.is_regular_file(ec) && name.ends_with(suffix)) paths.push_back(entry.path().string());
    }
    if (ec) throw Error(pattern + ": cannot list the directory: " + ec.message());
    if (paths.empty()) throw Error(pattern + ": the directory holds no *" + std::string(suffix) + " file");
  } else {
    paths.push_back(pattern);
  }
  std::sort(paths.begin(), paths.end());
  return paths;
}

}  // namespace sluice::cli
