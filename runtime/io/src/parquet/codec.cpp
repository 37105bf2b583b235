#include "parquet/codec.h"

#include <brotli/decode.h>
#include <lz4.h>
#include <snappy-c.h>
#include <zlib.h>
#include <zstd.h>

#include <string>

#include "sluice/error.h"

namespace sluice::io::parquet {
namespace {

[[noreturn]] void fail(Codec codec, const std::string& what) {
  throw Error(std::string(codec_name(codec)) + " page: " + what);
}

void check_size(Codec codec, std::size_t got, std::size_t want) {
  if (got != want)
    fail(codec, "decompressed to " + std::to_string(got) + " bytes, the page header says " + std::to_string(want));
}

void gunzip(std::span<const std::byte> in, std::span<std::byte> out) {
  std::size_t produced = 0, consumed = 0;
  // Each gzip member is inflated in turn (some writers concatenate them).
  while (consumed < in.size()) {
    z_stream z{};
    if (inflateInit2(&z, 15 + 32) != Z_OK) fail(Codec::gzip, "zlib cannot start");
    z.next_in = reinterpret_cast<Bytef*>(const_cast<std::byte*>(in.data() + consumed));
    z.avail_in = static_cast<uInt>(in.size() - consumed);
    z.next_out = reinterpret_cast<Bytef*>(out.data() + produced);
    z.avail_out = static_cast<uInt>(out.size() - produced);
    const int rc = inflate(&z, Z_FINISH);
    const std::size_t used_in = z.total_in, used_out = z.total_out;
    inflateEnd(&z);
    if (rc != Z_STREAM_END) {
      fail(Codec::gzip, rc == Z_BUF_ERROR ? "more data than the page header says" : "corrupt data (zlib error " +
                                                                                          std::to_string(rc) + ")");
    }
    consumed += used_in;
    produced += used_out;
    if (used_in == 0) break;
    if (produced == out.size()) break;
  }
  check_size(Codec::gzip, produced, out.size());
}

void hadoop_lz4(std::span<const std::byte> in, std::span<std::byte> out) {
  auto be32 = [](const std::byte* p) {
    return static_cast<std::uint32_t>(p[0]) << 24 | static_cast<std::uint32_t>(p[1]) << 16 |
           static_cast<std::uint32_t>(p[2]) << 8 | static_cast<std::uint32_t>(p[3]);
  };
  std::size_t at = 0, produced = 0;
  bool framed = true;
  while (at < in.size()) {
    if (in.size() - at < 8) { framed = false; break; }
    const std::uint32_t raw = be32(in.data() + at), packed = be32(in.data() + at + 4);
    if (raw > out.size() - produced || packed > in.size() - at - 8) { framed = false; break; }
    const int n = LZ4_decompress_safe(reinterpret_cast<const char*>(in.data() + at + 8),
                                      reinterpret_cast<char*>(out.data() + produced), static_cast<int>(packed),
                                      static_cast<int>(out.size() - produced));
    if (n < 0 || static_cast<std::uint32_t>(n) != raw) { framed = false; break; }
    at += 8 + packed;
    produced += raw;
  }
  if (framed && produced == out.size()) return;
  // Not Hadoop's framing: one raw LZ4 block, as older parquet-cpp wrote.
  const int n = LZ4_decompress_safe(reinterpret_cast<const char*>(in.data()), reinterpret_cast<char*>(out.data()),
                                    static_cast<int>(in.size()), static_cast<int>(out.size()));
  if (n < 0) fail(Codec::lz4, "corrupt data (neither Hadoop's LZ4 framing nor a raw LZ4 block)");
  check_size(Codec::lz4, static_cast<std::size_t>(n), out.size());
}

// One decompression context per thread, made at its first zstd page and
// reused: ZSTD_decompress makes and frees one (about 100 KiB) every page.
// It holds memory only, so a forked child may use the copy it inherits.
ZSTD_DCtx* zstd_context() {
  struct Context {
    ZSTD_DCtx* d = ZSTD_createDCtx();
    ~Context() { ZSTD_freeDCtx(d); }
  };
  thread_local Context context;
  if (!context.d) throw Error("zstd page: cannot make a decompression context (out of memory)");
  return context.d;
}

}  // namespace

void decompress(Codec codec, std::span<const std::byte> in, std::span<std::byte> out) {
  if (in.size() > INT32_MAX || out.size() > INT32_MAX) fail(codec, "larger than 2 GiB");
  switch (codec) {
    case Codec::none:
      check_size(codec, in.size(), out.size());
      if (!in.empty()) std::copy(in.begin(), in.end(), out.begin());
      return;
    case Codec::snappy: {
      std::size_t n = 0;
      const char* src = reinterpret_cast<const char*>(in.data());
      if (snappy_uncompressed_length(src, in.size(), &n) != SNAPPY_OK) fail(codec, "corrupt data");
      check_size(codec, n, out.size());
      if (snappy_uncompress(src, in.size(), reinterpret_cast<char*>(out.data()), &n) != SNAPPY_OK)
        fail(codec, "corrupt data");
      check_size(codec, n, out.size());
      return;
    }
    case Codec::gzip: return gunzip(in, out);
    case Codec::zstd: {
      const std::size_t n = ZSTD_decompressDCtx(zstd_context(), out.data(), out.size(), in.data(), in.size());
      if (ZSTD_isError(n)) fail(codec, ZSTD_getErrorName(n));
      check_size(codec, n, out.size());
      return;
    }
    case Codec::lz4_raw: {
      const int n = LZ4_decompress_safe(reinterpret_cast<const char*>(in.data()), reinterpret_cast<char*>(out.data()),
                                        static_cast<int>(in.size()), static_cast<int>(out.size()));
      if (n < 0) fail(codec, "corrupt data");
      check_size(codec, static_cast<std::size_t>(n), out.size());
      return;
    }
    case Codec::lz4: return hadoop_lz4(in, out);
    case Codec::brotli: {
      std::size_t n = out.size();
      if (BrotliDecoderDecompress(in.size(), reinterpret_cast<const std::uint8_t*>(in.data()), &n,
                                  reinterpret_cast<std::uint8_t*>(out.data())) != BROTLI_DECODER_RESULT_SUCCESS)
        fail(codec, "corrupt data, or more data than the page header says");
      check_size(codec, n, out.size());
      return;
    }
    case Codec::lzo: fail(codec, "the LZO codec is not supported");
  }
  throw Error("compression codec " + std::to_string(static_cast<int>(codec)) + " is not supported");
}

}  // namespace sluice::io::parquet
