// Internal: a whole file mapped read-only, its descriptor closed at once.
//
// Thread safety: reentrant. The mapping lives while any copy of the returned
// pointer does; it crosses fork() (MAP_SHARED, read-only).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace sluice::text::detail {

struct MappedFile {
  std::shared_ptr<const void> mapping;  // null for an empty file
  std::uint64_t size = 0;
  const unsigned char* bytes() const { return static_cast<const unsigned char*>(mapping.get()); }
};

// Throws sluice::Error "cannot open PATH: reason" / "cannot map PATH: reason".
MappedFile map_file(const std::string& path);

bool file_exists(const std::string& path);

}  // namespace sluice::text::detail
