#include "sluice/batch_copy.h"

#include <atomic>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

namespace sluice {

void copy_to_batch(void* dst, const void* src, std::size_t n) {
#if defined(__x86_64__)
  constexpr std::size_t kStreamMin = 4096;
  if (n >= kStreamMin) {
    auto* d = static_cast<unsigned char*>(dst);
    const auto* s = static_cast<const unsigned char*>(src);
    // Streaming stores need a 16-byte aligned destination: copy up to it first.
    const std::size_t head = (16 - reinterpret_cast<std::uintptr_t>(d) % 16) % 16;
    std::memcpy(d, s, head);
    d += head;
    s += head;
    n -= head;
    for (; n >= 64; d += 64, s += 64, n -= 64) {
      const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s));
      const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 16));
      const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 32));
      const __m128i e = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 48));
      _mm_stream_si128(reinterpret_cast<__m128i*>(d), a);
      _mm_stream_si128(reinterpret_cast<__m128i*>(d + 16), b);
      _mm_stream_si128(reinterpret_cast<__m128i*>(d + 32), c);
      _mm_stream_si128(reinterpret_cast<__m128i*>(d + 48), e);
    }
    std::memcpy(d, s, n);
    return;
  }
#endif
  std::memcpy(dst, src, n);
}

void store_fence() {
#if defined(__x86_64__)
  _mm_sfence();
#else
  // No streaming stores here (aarch64 and others: copy_to_batch is memcpy,
  // whose stores any later release store orders). A full fence (dmb ish on
  // aarch64) still keeps the contract for a caller that publishes with a
  // relaxed store after store_fence(); it costs one barrier per batch.
  std::atomic_thread_fence(std::memory_order_seq_cst);
#endif
}

}  // namespace sluice
