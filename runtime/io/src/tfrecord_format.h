// Internal: TFRecord framing.
//
//   uint64 length | uint32 masked_crc32c(length bytes) | data[length] | uint32 masked_crc32c(data)
//
// Thread safety: pure functions.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace sluice::io::detail {

inline constexpr std::size_t kTFRecordHeader = 12;  // length + its CRC
inline constexpr std::size_t kTFRecordFooter = 4;   // data CRC
inline constexpr std::size_t kTFRecordOverhead = kTFRecordHeader + kTFRecordFooter;

// The 12-byte header and the 4-byte footer that frame `data` (the writers').
std::array<std::byte, kTFRecordHeader> tfrecord_header(std::span<const std::byte> data);
std::array<std::byte, kTFRecordFooter> tfrecord_footer(std::span<const std::byte> data);

// The data length in a 12-byte header, or nullopt when the length CRC does
// not match (`why` then says so with both values).
std::optional<std::uint64_t> tfrecord_length(std::span<const std::byte, kTFRecordHeader> header,
                                             std::string* why);

// Whether the data CRC in `footer` matches `data`; `why` as above.
bool tfrecord_data_ok(std::span<const std::byte> data,
                      std::span<const std::byte, kTFRecordFooter> footer, std::string* why);

// Why a record of `length` data bytes cannot be whole when the file has
// `left` bytes after its header (data and data CRC need length + 4), or
// nullopt when it fits. Safe for any length: nothing is added to it.
std::optional<std::string> tfrecord_truncated(std::uint64_t length, std::uint64_t left);

// "PATH: record R at byte offset O: what".
std::string record_at(const std::string& path, std::uint64_t record, std::uint64_t offset,
                      const std::string& what);

}  // namespace sluice::io::detail
