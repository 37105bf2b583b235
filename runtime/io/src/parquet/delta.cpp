#include "parquet/delta.h"

#include <algorithm>
#include <string>

#include "parquet/rle_hybrid.h"
#include "sluice/error.h"

namespace sluice::io::parquet {

std::size_t decode_delta_binary(const std::byte* data, std::size_t size, std::int64_t expected,
                                std::vector<std::int64_t>& out, std::size_t limit) {
  const std::byte* p = data;
  const std::byte* end = data + size;
  const std::uint64_t block = read_uleb(p, end);
  const std::uint64_t minis = read_uleb(p, end);
  const std::uint64_t total = read_uleb(p, end);
  const std::uint64_t zz = read_uleb(p, end);
  std::int64_t value = static_cast<std::int64_t>((zz >> 1) ^ (~(zz & 1) + 1));
  if (block == 0 || block % 128 != 0 || minis == 0 || block % minis != 0 || (block / minis) % 32 != 0 ||
      block > (1u << 20))
    throw Error("DELTA_BINARY_PACKED: bad block size " + std::to_string(block) + " / " + std::to_string(minis) +
                " miniblocks");
  if (expected >= 0 && total != static_cast<std::uint64_t>(expected))
    throw Error("DELTA_BINARY_PACKED: the stream holds " + std::to_string(total) + " values, the page " +
                std::to_string(expected));
  if (expected < 0 && total > limit) throw Error("DELTA_BINARY_PACKED: more values than the page holds");
  out.resize(total);
  if (total == 0) return static_cast<std::size_t>(p - data);
  out[0] = value;
  const std::uint64_t per_mini = block / minis;
  std::size_t got = 1;
  std::uint64_t raw[64];
  while (got < total) {
    const std::uint64_t mz = read_uleb(p, end);
    const auto min_delta = static_cast<std::int64_t>((mz >> 1) ^ (~(mz & 1) + 1));
    if (static_cast<std::uint64_t>(end - p) < minis) throw Error("DELTA_BINARY_PACKED: bit widths past the page");
    const std::byte* widths = p;
    p += minis;
    for (std::uint64_t m = 0; m < minis && got < total; ++m) {
      const int bits = static_cast<int>(widths[m]);
      if (bits > 64) throw Error("DELTA_BINARY_PACKED: bit width " + std::to_string(bits) + " is over 64");
      const std::uint64_t bytes = per_mini * static_cast<std::uint64_t>(bits) / 8;
      if (bytes > static_cast<std::uint64_t>(end - p)) throw Error("DELTA_BINARY_PACKED: a miniblock runs past the page");
      for (std::uint64_t at = 0; at < per_mini && got < total; at += 64) {
        const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>({64, per_mini - at, total - got}));
        unpack_bits(p, static_cast<std::size_t>(bytes), at * static_cast<std::uint64_t>(bits), bits, raw, n);
        for (std::size_t i = 0; i < n; ++i) {
          value = static_cast<std::int64_t>(static_cast<std::uint64_t>(value) + static_cast<std::uint64_t>(min_delta) +
                                            raw[i]);
          out[got++] = value;
        }
      }
      p += bytes;
    }
  }
  return static_cast<std::size_t>(p - data);
}

std::size_t decode_delta_length(const std::byte* data, std::size_t size, std::size_t count, ByteArrays out,
                                std::vector<std::int64_t>& lengths) {
  const std::size_t used = decode_delta_binary(data, size, static_cast<std::int64_t>(count), lengths);
  std::uint64_t total = 0;
  for (std::int64_t n : lengths) {
    if (n < 0) throw Error("DELTA_LENGTH_BYTE_ARRAY: a negative length");
    total += static_cast<std::uint64_t>(n);
    if (total > size - used) throw Error("DELTA_LENGTH_BYTE_ARRAY: values run past the page");
  }
  const std::byte* p = data + used;
  std::uint64_t at = out.data->size();
  out.data->insert(out.data->end(), p, p + total);
  for (std::int64_t n : lengths) out.ends->push_back(at += static_cast<std::uint64_t>(n));
  return used + static_cast<std::size_t>(total);
}

void decode_delta_byte_array(const std::byte* data, std::size_t size, std::size_t count, ByteArrays out,
                             std::vector<std::int64_t>& prefixes, std::vector<std::int64_t>& lengths) {
  const std::size_t used = decode_delta_binary(data, size, static_cast<std::int64_t>(count), prefixes);
  const std::size_t used2 = decode_delta_binary(data + used, size - used, static_cast<std::int64_t>(count), lengths);
  const std::byte* p = data + used + used2;
  const std::byte* end = data + size;
  std::vector<std::byte>& bytes = *out.data;
  std::uint64_t prev_start = 0, prev_len = 0;
  for (std::size_t i = 0; i < count; ++i) {
    const std::int64_t prefix = prefixes[i], suffix = lengths[i];
    if (prefix < 0 || suffix < 0 || static_cast<std::uint64_t>(prefix) > prev_len)
      throw Error("DELTA_BYTE_ARRAY: a prefix longer than the previous value");
    if (static_cast<std::uint64_t>(suffix) > static_cast<std::uint64_t>(end - p))
      throw Error("DELTA_BYTE_ARRAY: values run past the page");
    const std::uint64_t start = bytes.size();
    bytes.resize(start + static_cast<std::uint64_t>(prefix) + static_cast<std::uint64_t>(suffix));
    if (prefix > 0) std::copy_n(bytes.begin() + static_cast<std::ptrdiff_t>(prev_start), prefix, bytes.begin() + static_cast<std::ptrdiff_t>(start));
    std::copy_n(p, suffix, bytes.begin() + static_cast<std::ptrdiff_t>(start + static_cast<std::uint64_t>(prefix)));
    p += suffix;
    prev_start = start;
    prev_len = static_cast<std::uint64_t>(prefix + suffix);
    out.ends->push_back(bytes.size());
  }
}

}  // namespace sluice::io::parquet
