// Internal: Parquet's delta encodings. DELTA_BINARY_PACKED (INT32, INT64;
// also the lengths of the two below), DELTA_LENGTH_BYTE_ARRAY and
// DELTA_BYTE_ARRAY (prefix lengths, then suffixes).
//
// Errors: a header or miniblock past the input, a bit width over 64, or more
// values than the caller expects throws sluice::Error. Arithmetic wraps, as
// the format says. Thread safety: reentrant.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace sluice::io::parquet {

// Decodes a DELTA_BINARY_PACKED stream at [data, data + size) holding
// exactly `expected` values (or, with expected < 0, however many its header
// says, at most `limit`) into out (resized; capacity kept). Returns the bytes
// the stream took.
std::size_t decode_delta_binary(const std::byte* data, std::size_t size, std::int64_t expected,
                                std::vector<std::int64_t>& out, std::size_t limit = 0);

// A byte-array column's values: value i is data[ends[i-1], ends[i]) (ends
// holds one entry per value; the first value starts at `base`).
struct ByteArrays {
  std::vector<std::byte>* data;
  std::vector<std::uint64_t>* ends;
};

// Appends `count` DELTA_LENGTH_BYTE_ARRAY values to out. Returns bytes used.
std::size_t decode_delta_length(const std::byte* data, std::size_t size, std::size_t count, ByteArrays out,
                                std::vector<std::int64_t>& scratch);

// Appends `count` DELTA_BYTE_ARRAY values to out.
void decode_delta_byte_array(const std::byte* data, std::size_t size, std::size_t count, ByteArrays out,
                             std::vector<std::int64_t>& prefixes, std::vector<std::int64_t>& scratch);

}  // namespace sluice::io::parquet
