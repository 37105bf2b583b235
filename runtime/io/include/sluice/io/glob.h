// sluice/io/glob.h: file name patterns.
//
// Patterns use fnmatch(3) syntax per path segment (`*`, `?`, `[...]`), plus
// `**` as a whole segment, which matches zero or more directories. A leading
// `.` in a name is matched only explicitly.
//
// Thread safety: pure functions (glob() reads the file system).
#pragma once

#include "sluice/export.h"

#include <string>
#include <string_view>
#include <vector>

namespace sluice::io {

// Whether `path` matches `pattern` ('/'-separated, both relative or both absolute).
SLUICE_API bool glob_match(std::string_view pattern, std::string_view path);

// The regular files matching `pattern`, sorted. Walks only below the
// pattern's longest wildcard-free directory prefix. Throws sluice::Error when
// that directory does not exist.
SLUICE_API std::vector<std::string> glob(const std::string& pattern);

}  // namespace sluice::io
