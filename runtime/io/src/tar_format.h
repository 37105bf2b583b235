// Internal: tar headers (ustar, pax, GNU) and WebDataset key/field naming.
//
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace sluice::io::detail {

inline constexpr std::size_t kTarBlock = 512;

enum class TarEntry : std::uint8_t {
  file,         // a regular file: its data follows
  end,          // an all-zero block: end of archive
  pax,          // a pax extended header for the next member (data: records)
  gnu_longname, // GNU 'L': the data is the next member's path
  other,        // directories, links, pax globals, ...: data (if any) skipped
};

struct TarHeader {
  TarEntry entry = TarEntry::other;
  std::string path;
  std::uint64_t size = 0;  // data bytes that follow the header
};

// Parses one 512-byte header; false (with `why`) when its checksum or size
// field is corrupt.
bool parse_tar_header(std::span<const std::byte, kTarBlock> block, TarHeader& out,
                      std::string& why);

// The "path" of pax extended header records, or "" when it has none.
std::string pax_path(std::string_view records);

// Data plus padding to the next block boundary.
inline std::uint64_t tar_padded(std::uint64_t size) {
  return (size + kTarBlock - 1) / kTarBlock * kTarBlock;
}

// WebDataset naming: "dir/base.ext.more" -> key "dir/base", field "ext.more".
// A name without '.' has the whole path as key and an empty field. False for
// a hidden file (its base name starts with '.': macOS's "._x.jpg" and
// ".DS_Store" in tars made there), which has no key: as WebDataset does, the
// readers pass over it, in no sample.
bool webdataset_split(std::string_view path, std::string_view& key, std::string_view& field);

// A member name twice in one sample is an error (as in WebDataset): one of
// the two would be the field, and which is no reader's choice to make. The
// message both tar readers give, `member` the second one's whole name.
std::string second_member_error(std::string_view member, std::string_view key);

}  // namespace sluice::io::detail
