// Internal: a growable byte buffer that does not zero what it grows into
// (std::vector<std::byte> writes every new byte once more before a decoder
// overwrites it). Capacity is kept across clear(), so a buffer reused for
// each row group stops allocating once it has grown to the largest. Its
// bytes start on a cache line (kAlign), so rows of 64 bytes laid out in it
// each take one line.
//
// Thread safety: none; one owner.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace sluice::io::parquet {

class ByteBuffer {
 public:
  static constexpr std::size_t kAlign = 64;
  static constexpr std::size_t kHuge = std::size_t{2} << 20;  // a huge page on x86-64 and most arm64

  std::byte* data() { return data_.get(); }
  const std::byte* data() const { return data_.get(); }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  void clear() { size_ = 0; }
  // Grows (or shrinks) to n bytes; new bytes are uninitialised.
  void resize(std::size_t n) {
    reserve(n);
    size_ = n;
  }
  // n more bytes, uninitialised: where they start.
  std::byte* extend(std::size_t n) {
    resize(size_ + n);
    return data_.get() + size_ - n;
  }
  void append(const std::byte* p, std::size_t n) {
    if (n > 0) std::memcpy(extend(n), p, n);
  }
  void reserve(std::size_t n) {
    if (n <= capacity_) return;
    if (n > SIZE_MAX / 2) throw std::bad_alloc();  // no size below wraps
    std::size_t grown = std::max(n, capacity_ + capacity_ / 2);
    // A buffer of several huge pages is asked to be backed by them: a
    // decoded row group read out of order touches its rows at random, each
    // a TLB miss on 4 KiB pages, and a fresh worker faults its buffers in
    // 512 times less often.
    const bool huge = grown >= 2 * kHuge;
    const std::size_t align = huge ? kHuge : kAlign;
    grown = (grown + align - 1) / align * align;
    Bytes bigger(static_cast<std::byte*>(std::aligned_alloc(align, grown)));
    if (!bigger) throw std::bad_alloc();
#if defined(MADV_HUGEPAGE)
    if (huge) ::madvise(bigger.get(), grown, MADV_HUGEPAGE);  // a hint: refused, the pages stay small
#endif
    if (size_ > 0) std::memcpy(bigger.get(), data_.get(), size_);
    data_ = std::move(bigger);
    capacity_ = grown;
  }
  void swap(ByteBuffer& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(size_, other.size_);
    std::swap(capacity_, other.capacity_);
  }

 private:
  struct Free {
    void operator()(std::byte* p) const noexcept { std::free(p); }
  };
  using Bytes = std::unique_ptr<std::byte[], Free>;
  Bytes data_;
  std::size_t size_ = 0;
  std::size_t capacity_ = 0;
};

}  // namespace sluice::io::parquet
