#include "sluice/io/glob.h"

#include <fnmatch.h>

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "sluice/error.h"

namespace sluice::io {
namespace {

std::vector<std::string_view> split(std::string_view s) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  while (start <= s.size()) {
    std::size_t slash = s.find('/', start);
    if (slash == std::string_view::npos) slash = s.size();
    parts.push_back(s.substr(start, slash - start));
    start = slash + 1;
  }
  return parts;
}

bool has_wildcard(std::string_view s) { return s.find_first_of("*?[") != std::string_view::npos; }

bool match_segments(const std::vector<std::string_view>& pat, std::size_t pi,
                    const std::vector<std::string_view>& path, std::size_t si) {
  if (pi == pat.size()) return si == path.size();
  if (pat[pi] == "**") {
    // Zero or more whole directories, none of them hidden.
    for (std::size_t k = si; k <= path.size(); ++k) {
      if (match_segments(pat, pi + 1, path, k)) return true;
      if (k < path.size() && !path[k].empty() && path[k][0] == '.') return false;
    }
    return false;
  }
  if (si == path.size()) return false;
  std::string p(pat[pi]), s(path[si]);
  if (fnmatch(p.c_str(), s.c_str(), FNM_PERIOD) != 0) return false;
  return match_segments(pat, pi + 1, path, si + 1);
}

}  // namespace

bool glob_match(std::string_view pattern, std::string_view path) {
  return match_segments(split(pattern), 0, split(path), 0);
}

std::vector<std::string> glob(const std::string& pattern) {
  namespace fs = std::filesystem;
  // The longest directory prefix without wildcards is where the walk starts.
  std::vector<std::string_view> parts = split(pattern);
  std::string root;
  std::size_t fixed = 0;
  while (fixed + 1 < parts.size() && !has_wildcard(parts[fixed])) {
    root += std::string(parts[fixed]) + "/";
    ++fixed;
  }
  std::vector<std::string> out;
  if (fixed + 1 == parts.size() && !has_wildcard(parts[fixed])) {  // no wildcard at all
    std::error_code ec;
    if (fs::is_regular_file(pattern, ec)) out.push_back(pattern);
    return out;
  }
  const std::string start = root.empty() ? "." : root;
  std::error_code ec;
  if (!fs::is_directory(start, ec)) throw Error("glob " + pattern + ": no directory " + start);
  const bool recursive = std::any_of(parts.begin() + fixed, parts.end(),
                                     [](std::string_view p) { return p == "**"; });
  const std::size_t depth = parts.size() - fixed;  // segments below root, when not recursive
  for (fs::recursive_directory_iterator it(start, fs::directory_options::follow_directory_symlink, ec),
       end;
       it != end; it.increment(ec)) {
    if (ec) throw Error("glob " + pattern + ": " + ec.message());
    if (!recursive && static_cast<std::size_t>(it.depth()) + 1 >= depth) it.disable_recursion_pending();
    std::error_code fe;
    if (!it->is_regular_file(fe)) continue;
    std::string path = root + fs::relative(it->path(), start).generic_string();
    if (glob_match(pattern, path)) out.push_back(std::move(path));
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace sluice::io
