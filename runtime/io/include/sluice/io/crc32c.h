// sluice/io/crc32c.h: CRC-32C (Castagnoli), as TFRecord framing uses it.
//
// crc32c() uses AVX-512 carry-less multiplication (VPCLMULQDQ) together with
// the SSE4.2 crc32 instruction where the CPU has them, the crc32 instruction on
// three interleaved streams where it has only SSE4.2, and a slicing-by-8 table
// otherwise; all give the same value.
//
// Thread safety: pure functions.
#pragma once

#include "sluice/export.h"

#include <cstddef>
#include <cstdint>
#include <span>

namespace sluice::io {

// CRC-32C of `data`, continuing from `crc` (0 to start).
SLUICE_API std::uint32_t crc32c(std::span<const std::byte> data, std::uint32_t crc = 0);

// The table-driven path and the crc32-instruction path (the table where the
// CPU lacks SSE4.2), for tests that compare the paths.
SLUICE_API std::uint32_t crc32c_portable(std::span<const std::byte> data, std::uint32_t crc = 0);
SLUICE_API std::uint32_t crc32c_sse42(std::span<const std::byte> data, std::uint32_t crc = 0);

// TFRecord's masked CRC: ((crc >> 15) | (crc << 17)) + 0xa282ead8.
inline std::uint32_t mask_crc(std::uint32_t crc) {
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

}  // namespace sluice::io
