#include "tfrecord_format.h"

#include <cstdio>
#include <cstring>

#include "sluice/io/crc32c.h"

namespace sluice::io::detail {
namespace {

std::uint32_t load32(const std::byte* p) {
  std::uint32_t v;
  std::memcpy(&v, p, 4);
  return v;  // little endian host (x86-64, aarch64)
}

std::string hex(std::uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

}  // namespace

std::array<std::byte, kTFRecordHeader> tfrecord_header(std::span<const std::byte> data) {
  std::array<std::byte, kTFRecordHeader> header;
  const std::uint64_t length = data.size();
  std::memcpy(header.data(), &length, 8);
  const std::uint32_t length_crc = mask_crc(crc32c(std::span(header.data(), 8)));
  std::memcpy(header.data() + 8, &length_crc, 4);
  return header;
}

std::array<std::byte, kTFRecordFooter> tfrecord_footer(std::span<const std::byte> data) {
  std::array<std::byte, kTFRecordFooter> footer;
  const std::uint32_t data_crc = mask_crc(crc32c(data));
  std::memcpy(footer.data(), &data_crc, 4);
  return footer;
}

std::optional<std::uint64_t> tfrecord_length(std::span<const std::byte, kTFRecordHeader> header,
                                             std::string* why) {
  std::uint64_t length;
  std::memcpy(&length, header.data(), 8);
  const std::uint32_t stored = load32(header.data() + 8);
  const std::uint32_t computed = mask_crc(crc32c(header.first(8)));
  if (stored != computed) {
    if (why) *why = "length CRC mismatch (stored " + hex(stored) + ", computed " + hex(computed) + ")";
    return std::nullopt;
  }
  return length;
}

bool tfrecord_data_ok(std::span<const std::byte> data,
                      std::span<const std::byte, kTFRecordFooter> footer, std::string* why) {
  const std::uint32_t stored = load32(footer.data());
  const std::uint32_t computed = mask_crc(crc32c(data));
  if (stored == computed) return true;
  if (why) *why = "data CRC mismatch (stored " + hex(stored) + ", computed " + hex(computed) + ")";
  return false;
}

std::optional<std::string> tfrecord_truncated(std::uint64_t length, std::uint64_t left) {
  if (length <= left && left - length >= kTFRecordFooter) return std::nullopt;
  return "truncated record: length " + std::to_string(length) + ", the file ends " + std::to_string(left) +
         " bytes after the header";
}

std::string record_at(const std::string& path, std::uint64_t record, std::uint64_t offset,
                      const std::string& what) {
  return path + ": record " + std::to_string(record) + " at byte offset " + std::to_string(offset) +
         ": " + what;
}

}  // namespace sluice::io::detail
