// Internal: Parquet's page compression codecs, behind one call.
//
// SNAPPY (libsnappy), GZIP (zlib; concatenated members too), ZSTD (libzstd;
// several frames too), LZ4_RAW (liblz4 block), Hadoop's LZ4 (big-endian
// length-prefixed blocks; falling back to one raw block, as older Arrow
// writers made), BROTLI (libbrotlidec). LZO is refused by name.
//
// Errors: throws sluice::Error when the input does not decompress to exactly
// `out.size()` bytes, the size the page header states (so a hostile page
// cannot make it allocate more). Thread safety: reentrant; each thread keeps
// one zstd decompression context, reused page after page.
#pragma once

#include <cstddef>
#include <span>

#include "parquet/metadata.h"

namespace sluice::io::parquet {

void decompress(Codec codec, std::span<const std::byte> in, std::span<std::byte> out);

}  // namespace sluice::io::parquet
