// paths.h: the files a command-line argument names: one file, a glob or a directory.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace sluice::cli {

// A pattern with * ? or [ is a glob (quoted, so that the shell leaves it): the
// files it matches; a directory: its files whose names end in `suffix`; else
// the path itself. Sorted. Throws Error if a glob or directory names no file.
std::vector<std::string> expand_paths(const std::string& pattern, std::string_view suffix);

}  // namespace sluice::cli
