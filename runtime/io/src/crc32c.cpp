#include "sluice/io/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace sluice::io {
namespace {

constexpr std::uint32_t kPoly = 0x82f63b78u;  // CRC-32C, reflected

// Slicing-by-8 tables: table[k][b] is the CRC of byte b followed by k zero bytes.
struct Tables {
  std::uint32_t t[8][256];
  Tables() {
    for (std::uint32_t b = 0; b < 256; ++b) {
      std::uint32_t c = b;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kPoly : c >> 1;
      t[0][b] = c;
    }
    for (std::uint32_t b = 0; b < 256; ++b)
      for (int k = 1; k < 8; ++k) t[k][b] = (t[k - 1][b] >> 8) ^ t[0][t[k - 1][b] & 0xff];
  }
};
const Tables& tables() {
  static const Tables t;
  return t;
}

std::uint32_t portable(const unsigned char* p, std::size_t n, std::uint32_t crc) {
  const Tables& tb = tables();
  std::uint32_t c = ~crc;
  while (n >= 8) {
    std::uint64_t w;
    std::memcpy(&w, p, 8);
    w ^= c;
    c = tb.t[7][w & 0xff] ^ tb.t[6][(w >> 8) & 0xff] ^ tb.t[5][(w >> 16) & 0xff] ^
        tb.t[4][(w >> 24) & 0xff] ^ tb.t[3][(w >> 32) & 0xff] ^ tb.t[2][(w >> 40) & 0xff] ^
        tb.t[1][(w >> 48) & 0xff] ^ tb.t[0][w >> 56];
    p += 8;
    n -= 8;
  }
  while (n--) c = (c >> 8) ^ tb.t[0][(c ^ *p++) & 0xff];
  return ~c;
}

#if defined(__x86_64__)
inline std::uint64_t load64(const unsigned char* q) {
  std::uint64_t w;
  std::memcpy(&w, q, 8);
  return w;
}

// CRCs of consecutive pieces computed separately are joined by "shifting" the
// register of the first over the length of the second: the register after
// `len` zero bytes, a linear map of the register. ZeroShift tabulates that map
// once per length, from the crc32 instruction run over zeros for each bit;
// then reg(A || B) = shift(reg(A)) ^ reg(B started from 0).
struct ZeroShift {
  std::uint32_t t[4][256];
  __attribute__((target("sse4.2"))) explicit ZeroShift(std::size_t len) {  // len % 8 == 0
    std::uint32_t bit[32];
    for (int b = 0; b < 32; ++b) {
      std::uint64_t c = std::uint32_t{1} << b;
      for (std::size_t i = 0; i < len; i += 8) c = _mm_crc32_u64(c, 0);
      bit[b] = static_cast<std::uint32_t>(c);
    }
    for (int k = 0; k < 4; ++k)
      for (std::uint32_t v = 0; v < 256; ++v) {
        std::uint32_t sum = 0;
        for (int b = 0; b < 8; ++b)
          if ((v >> b) & 1) sum ^= bit[8 * k + b];
        t[k][v] = sum;
      }
  }
  std::uint32_t shift(std::uint32_t reg) const {
    return t[0][reg & 0xff] ^ t[1][(reg >> 8) & 0xff] ^ t[2][(reg >> 16) & 0xff] ^ t[3][reg >> 24];
  }
};

// Three streams of kLong (then kShort) bytes run interleaved to hide the crc32
// instruction's latency, then are joined (the method of Mark Adler's crc32c.c).
constexpr std::size_t kLong = 8192;
constexpr std::size_t kShort = 256;

// Consumes 3 * block bytes at a time while n allows, updating reg, p and n.
__attribute__((target("sse4.2"))) void interleave(std::uint64_t& reg, const unsigned char*& p,
                                                  std::size_t& n, std::size_t block,
                                                  const ZeroShift& join) {
  std::uint64_t c0 = reg;
  while (n >= 3 * block) {
    std::uint64_t c1 = 0, c2 = 0;
    const unsigned char* end = p + block;
    do {
      c0 = _mm_crc32_u64(c0, load64(p));
      c1 = _mm_crc32_u64(c1, load64(p + block));
      c2 = _mm_crc32_u64(c2, load64(p + 2 * block));
      p += 8;
    } while (p < end);
    c0 = join.shift(static_cast<std::uint32_t>(c0)) ^ c1;
    c0 = join.shift(static_cast<std::uint32_t>(c0)) ^ c2;
    p += 2 * block;
    n -= 3 * block;
  }
  reg = c0;
}

__attribute__((target("sse4.2"))) std::uint32_t hardware(const unsigned char* p, std::size_t n,
                                                         std::uint32_t crc) {
  static const ZeroShift long_join(kLong);
  static const ZeroShift short_join(kShort);
  std::uint64_t c0 = ~crc;
  while (n && (reinterpret_cast<std::uintptr_t>(p) & 7)) {
    c0 = _mm_crc32_u8(static_cast<std::uint32_t>(c0), *p++);
    --n;
  }
  interleave(c0, p, n, kLong, long_join);
  interleave(c0, p, n, kShort, short_join);
  while (n >= 8) {
    c0 = _mm_crc32_u64(c0, load64(p));
    p += 8;
    n -= 8;
  }
  while (n--) c0 = _mm_crc32_u8(static_cast<std::uint32_t>(c0), *p++);
  return ~static_cast<std::uint32_t>(c0);
}

const bool kHaveSse42 = __builtin_cpu_supports("sse4.2");

// Carry-less multiplication folding (the method of Intel's "Fast CRC
// Computation for Generic Polynomials Using PCLMULQDQ"), 64 bytes per vector.
//
// In TFRecord's reflected bit order, a 16-byte lane B stands for the
// polynomial Lo(x) * x^64 + Hi(x) (Lo: its first 8 bytes, bit-reversed).
// Moving B forward by D bits multiplies it by x^D; folding replaces B by
// clmul(lo, K1) ^ clmul(hi, K2), congruent to B * x^D mod P and again 128 bits
// wide, where K1 and K2 are x^(D+63) and x^(D-1) mod P, each placed reversed
// in a 64-bit operand (the -1 undoes the one-bit shift of a reflected clmul).
// The last 64 bytes are then reduced with the crc32 instruction, which maps a
// block B to the register value of B * x^32 mod P.

// x^n mod P, bit i holding the coefficient of x^i.
std::uint32_t x_pow_mod(std::size_t n) {
  std::uint64_t r = 1;
  for (std::size_t i = 0; i < n; ++i) {
    r <<= 1;
    if (r >> 32) r ^= 0x11edc6f41ull;  // P = x^32 + 0x1edc6f41
  }
  return static_cast<std::uint32_t>(r);
}

// The coefficient of x^i moved to bit 63 - i.
std::uint64_t reversed64(std::uint32_t r) {
  std::uint64_t v = 0;
  for (int i = 0; i < 32; ++i)
    if ((r >> i) & 1) v |= std::uint64_t{1} << (63 - i);
  return v;
}

struct FoldConstants {
  std::uint64_t lo, hi;  // K1 for the first 8 bytes of a lane, K2 for the last 8
  explicit FoldConstants(std::size_t bits)
      : lo(reversed64(x_pow_mod(bits + 63))), hi(reversed64(x_pow_mod(bits - 1))) {}
};

constexpr std::size_t kVectorMin = 512;  // shorter inputs take the crc32 instruction path

#define SLUICE_VPCLMUL_TARGET __attribute__((target("avx512f,avx512vl,vpclmulqdq,pclmul,sse4.2")))

SLUICE_VPCLMUL_TARGET inline __m512i fold(__m512i x, __m512i k, __m512i next) {
  return _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(x, k, 0x00),
                                   _mm512_clmulepi64_epi128(x, k, 0x11), next, 0x96);
}

SLUICE_VPCLMUL_TARGET inline __m512i broadcast(const FoldConstants& k) {
  return _mm512_set_epi64(static_cast<long long>(k.hi), static_cast<long long>(k.lo),
                          static_cast<long long>(k.hi), static_cast<long long>(k.lo),
                          static_cast<long long>(k.hi), static_cast<long long>(k.lo),
                          static_cast<long long>(k.hi), static_cast<long long>(k.lo));
}

// Folds the 256 * iters bytes at p (iters >= 1) with four 64-byte accumulators
// and returns the register, continuing from `reg`. side(i) runs in iteration i:
// work for other execution units, overlapping the carry-less multiplies.
template <class Side>
SLUICE_VPCLMUL_TARGET inline std::uint32_t fold256(const unsigned char* p, std::size_t iters,
                                                   std::uint32_t reg, Side side) {
  static const FoldConstants across_2048(2048);
  static const FoldConstants across_512(512);
  const __m512i k2048 = broadcast(across_2048);
  const __m512i k512 = broadcast(across_512);
  // The running register, xored into the first four bytes, continues the CRC.
  __m512i x0 = _mm512_xor_si512(_mm512_loadu_si512(p),
                                _mm512_zextsi128_si512(_mm_cvtsi32_si128(static_cast<int>(reg))));
  __m512i x1 = _mm512_loadu_si512(p + 64);
  __m512i x2 = _mm512_loadu_si512(p + 128);
  __m512i x3 = _mm512_loadu_si512(p + 192);
  side(0);
  for (std::size_t i = 1; i < iters; ++i) {
    p += 256;
    x0 = fold(x0, k2048, _mm512_loadu_si512(p));
    x1 = fold(x1, k2048, _mm512_loadu_si512(p + 64));
    x2 = fold(x2, k2048, _mm512_loadu_si512(p + 128));
    x3 = fold(x3, k2048, _mm512_loadu_si512(p + 192));
    side(i);
  }
  x1 = fold(x0, k512, x1);
  x2 = fold(x1, k512, x2);
  x3 = fold(x2, k512, x3);
  alignas(64) unsigned char last[64];
  _mm512_store_si512(last, x3);
  std::uint64_t c = 0;
  for (int i = 0; i < 64; i += 8) c = _mm_crc32_u64(c, load64(last + i));
  return static_cast<std::uint32_t>(c);
}

// Long inputs go in blocks of 256 * kIters bytes folded by vectors, followed by
// three streams of kIters * kLane bytes fed to the crc32 instruction in the
// same loop: the two run on different execution units (measured on Zen 5:
// 55 GB/s vectors alone, 68 GB/s both), and the four registers are joined.
constexpr std::size_t kIters = 128;
constexpr std::size_t kLane = 48;
constexpr std::size_t kStream = kIters * kLane;
constexpr std::size_t kBlock = 256 * kIters + 3 * kStream;

// n >= kVectorMin.
SLUICE_VPCLMUL_TARGET std::uint32_t vector(const unsigned char* p, std::size_t n, std::uint32_t crc) {
  static const ZeroShift stream_join(kStream);
  std::uint32_t reg = ~crc;
  while (n >= kBlock) {
    const unsigned char* s = p + 256 * kIters;
    std::uint64_t c0 = 0, c1 = 0, c2 = 0;
    auto streams = [&](std::size_t i) SLUICE_VPCLMUL_TARGET {
      const unsigned char* q = s + i * kLane;
      for (std::size_t j = 0; j < kLane; j += 8) {
        c0 = _mm_crc32_u64(c0, load64(q + j));
        c1 = _mm_crc32_u64(c1, load64(q + kStream + j));
        c2 = _mm_crc32_u64(c2, load64(q + 2 * kStream + j));
      }
    };
    reg = fold256(p, kIters, reg, streams);
    reg = stream_join.shift(reg) ^ static_cast<std::uint32_t>(c0);
    reg = stream_join.shift(reg) ^ static_cast<std::uint32_t>(c1);
    reg = stream_join.shift(reg) ^ static_cast<std::uint32_t>(c2);
    p += kBlock;
    n -= kBlock;
  }
  if (n >= kVectorMin) {
    const std::size_t iters = n / 256;
    reg = fold256(p, iters, reg, [](std::size_t) {});
    p += 256 * iters;
    n -= 256 * iters;
  }
  return hardware(p, n, ~reg);
}

const bool kHaveVpclmul = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
                          __builtin_cpu_supports("vpclmulqdq") && __builtin_cpu_supports("sse4.2");
#endif

}  // namespace

std::uint32_t crc32c_portable(std::span<const std::byte> data, std::uint32_t crc) {
  return portable(reinterpret_cast<const unsigned char*>(data.data()), data.size(), crc);
}

std::uint32_t crc32c_sse42(std::span<const std::byte> data, std::uint32_t crc) {
#if defined(__x86_64__)
  if (kHaveSse42) return hardware(reinterpret_cast<const unsigned char*>(data.data()), data.size(), crc);
#endif
  return crc32c_portable(data, crc);
}

std::uint32_t crc32c(std::span<const std::byte> data, std::uint32_t crc) {
  const auto* p = reinterpret_cast<const unsigned char*>(data.data());
#if defined(__x86_64__)
  if (kHaveVpclmul && data.size() >= kVectorMin) return vector(p, data.size(), crc);
  if (kHaveSse42) return hardware(p, data.size(), crc);
#endif
  return portable(p, data.size(), crc);
}

}  // namespace sluice::io
