#include "tar_format.h"

#include <cstring>

namespace sluice::io::detail {
namespace {

std::string field_string(const std::byte* p, std::size_t n) {
  const char* c = reinterpret_cast<const char*>(p);
  return std::string(c, strnlen(c, n));
}

// An octal field (spaces or NULs around the digits), or GNU base-256.
bool parse_number(const std::byte* p, std::size_t n, std::uint64_t& out) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  if (u[0] & 0x80) {  // base-256: big-endian binary after the flag bit
    std::uint64_t v = u[0] & 0x3f;
    for (std::size_t i = 1; i < n; ++i) {
      if (v >> 55) return false;
      v = (v << 8) | u[i];
    }
    out = v;
    return true;
  }
  std::size_t i = 0;
  while (i < n && (u[i] == ' ' || u[i] == 0)) ++i;
  std::uint64_t v = 0;
  bool digits = false;
  for (; i < n && u[i] >= '0' && u[i] <= '7'; ++i) {
    v = v * 8 + (u[i] - '0');
    digits = true;
  }
  for (; i < n; ++i)
    if (u[i] != ' ' && u[i] != 0) return false;
  out = digits ? v : 0;
  return true;
}

}  // namespace

bool parse_tar_header(std::span<const std::byte, kTarBlock> block, TarHeader& out,
                      std::string& why) {
  const std::byte* b = block.data();
  bool zero = true;
  for (std::byte x : block)
    if (x != std::byte{0}) {
      zero = false;
      break;
    }
  if (zero) {
    out.entry = TarEntry::end;
    out.size = 0;
    out.path.clear();
    return true;
  }
  std::uint64_t stored;
  if (!parse_number(b + 148, 8, stored)) {
    why = "corrupt tar header: unreadable checksum field";
    return false;
  }
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < kTarBlock; ++i)
    sum += (i >= 148 && i < 156) ? ' ' : static_cast<unsigned char>(b[i]);
  if (sum != stored) {
    why = "corrupt tar header: checksum " + std::to_string(stored) + " stored, " +
          std::to_string(sum) + " computed";
    return false;
  }
  if (!parse_number(b + 124, 12, out.size)) {
    why = "corrupt tar header: unreadable size field";
    return false;
  }
  std::string name = field_string(b, 100);
  if (std::memcmp(b + 257, "ustar", 5) == 0) {
    std::string prefix = field_string(b + 345, 155);
    if (!prefix.empty()) name = prefix + "/" + name;
  }
  out.path = std::move(name);
  switch (static_cast<char>(b[156])) {
    case '0': case '\0': case '7': out.entry = TarEntry::file; break;
    case 'x': out.entry = TarEntry::pax; break;
    case 'L': out.entry = TarEntry::gnu_longname; break;
    default: out.entry = TarEntry::other; break;
  }
  return true;
}

std::string pax_path(std::string_view records) {
  // Each record: "<len> <key>=<value>\n", len counting the whole record.
  std::string path;
  while (!records.empty()) {
    std::size_t space = records.find(' ');
    if (space == std::string_view::npos) break;
    std::size_t len = 0;
    for (char c : records.substr(0, space)) {
      if (c < '0' || c > '9') return path;
      len = len * 10 + static_cast<std::size_t>(c - '0');
    }
    if (len <= space + 1 || len > records.size()) break;
    std::string_view kv = records.substr(space + 1, len - space - 2);  // without '\n'
    std::size_t eq = kv.find('=');
    if (eq != std::string_view::npos && kv.substr(0, eq) == "path") path = kv.substr(eq + 1);
    records.remove_prefix(len);
  }
  return path;
}

bool webdataset_split(std::string_view path, std::string_view& key, std::string_view& field) {
  std::size_t slash = path.rfind('/');
  std::size_t base = slash == std::string_view::npos ? 0 : slash + 1;
  if (base < path.size() && path[base] == '.') return false;
  std::size_t dot = path.find('.', base);
  if (dot == std::string_view::npos) {
    key = path;
    field = {};
  } else {
    key = path.substr(0, dot);
    field = path.substr(dot + 1);
  }
  return true;
}

std::string second_member_error(std::string_view member, std::string_view key) {
  return "tar member " + std::string(member) + " is the second of that name in sample " + std::string(key);
}

}  // namespace sluice::io::detail
