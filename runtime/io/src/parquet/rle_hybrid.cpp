#include "parquet/rle_hybrid.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "sluice/error.h"

namespace sluice::io::parquet {
namespace {

inline std::uint64_t load64(const std::byte* data, std::size_t size, std::size_t at) {
  std::uint64_t w = 0;
  if (at + 8 <= size) {
    std::memcpy(&w, data + at, 8);
  } else if (at < size) {
    std::memcpy(&w, data + at, size - at);
  }
  return w;
}

}  // namespace

void unpack_bits(const std::byte* data, std::size_t size, std::uint64_t first, int bits, std::uint64_t* out,
                 std::size_t n) {
  if (bits == 0) {
    std::memset(out, 0, n * sizeof(*out));
    return;
  }
  const std::uint64_t mask = bits == 64 ? ~0ull : (1ull << bits) - 1;
  std::uint64_t bit = first;
  for (std::size_t i = 0; i < n; ++i, bit += static_cast<std::uint64_t>(bits)) {
    const std::size_t at = bit >> 3;
    const int shift = static_cast<int>(bit & 7);
    std::uint64_t v = load64(data, size, at) >> shift;
    if (shift + bits > 64) v |= load64(data, size, at + 8) << (64 - shift);
    out[i] = v & mask;
  }
}

void unpack_bits32(const std::byte* data, std::size_t size, std::uint64_t first, int bits, std::uint32_t* out,
                   std::size_t n) {
  if (bits == 0) {
    std::memset(out, 0, n * sizeof(*out));
    return;
  }
  const std::uint64_t mask = (1ull << bits) - 1;
  std::uint64_t bit = first;
  for (std::size_t i = 0; i < n; ++i, bit += static_cast<std::uint64_t>(bits)) {
    const std::size_t at = bit >> 3;
    out[i] = static_cast<std::uint32_t>((load64(data, size, at) >> (bit & 7)) & mask);
  }
}

std::uint64_t read_uleb(const std::byte*& p, const std::byte* end) {
  std::uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (p >= end) throw Error("a varint runs past its page");
    const auto b = static_cast<std::uint8_t>(*p++);
    v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) return v;
  }
  throw Error("a varint is longer than 10 bytes");
}

RleDecoder::RleDecoder(const std::byte* data, std::size_t size, int bits)
    : p_(data), end_(data + size), bits_(bits) {
  if (bits < 0 || bits > 32) throw Error("RLE bit width " + std::to_string(bits) + " is over 32");
}

bool RleDecoder::next_run() {
  if (p_ >= end_) return false;
  const std::uint64_t header = read_uleb(p_, end_);
  if (header & 1) {
    const std::uint64_t groups = header >> 1;
    if (groups == 0) return next_run();
    const std::uint64_t bytes = groups * static_cast<std::uint64_t>(bits_);  // 8 values per group
    if (groups > (1ull << 40)) throw Error("an RLE bit-packed run is too long");
    packed_ = true;
    packed_at_ = p_;
    // A writer may end the last run early; only whole values are read.
    packed_bytes_ = static_cast<std::size_t>(std::min<std::uint64_t>(bytes, static_cast<std::uint64_t>(end_ - p_)));
    run_left_ = bits_ == 0 ? groups * 8 : std::min<std::uint64_t>(groups * 8, packed_bytes_ * 8 / bits_);
    packed_index_ = 0;
    p_ += packed_bytes_;
  } else {
    run_left_ = header >> 1;
    packed_ = false;
    const int width = (bits_ + 7) / 8;
    if (end_ - p_ < width) throw Error("an RLE run's value runs past its page");
    std::uint32_t v = 0;
    std::memcpy(&v, p_, static_cast<std::size_t>(width));
    p_ += width;
    if (bits_ < 32 && (v >> bits_) != 0) throw Error("an RLE run's value is wider than its bit width");
    value_ = v;
  }
  return true;
}

std::size_t RleDecoder::get(std::uint32_t* out, std::size_t n) {
  std::size_t done = 0;
  while (done < n) {
    if (run_left_ == 0 && !next_run()) break;
    const std::size_t take = static_cast<std::size_t>(std::min<std::uint64_t>(run_left_, n - done));
    if (packed_) {
      unpack_bits32(packed_at_, packed_bytes_, packed_index_ * static_cast<std::uint64_t>(bits_), bits_, out + done,
                    take);
      packed_index_ += take;
    } else {
      for (std::size_t i = 0; i < take; ++i) out[done + i] = value_;
    }
    run_left_ -= take;
    done += take;
  }
  return done;
}

std::size_t RleDecoder::count(std::size_t n, std::uint32_t value, std::size_t* equal, std::uint32_t* largest) {
  std::size_t done = 0, same = 0;
  std::uint32_t top = 0;
  std::uint32_t buffer[256];
  while (done < n) {
    if (run_left_ == 0 && !next_run()) break;
    const std::size_t take = static_cast<std::size_t>(std::min<std::uint64_t>(run_left_, n - done));
    if (packed_) {
      for (std::size_t at = 0; at < take; at += 256) {
        const std::size_t k = std::min<std::size_t>(256, take - at);
        unpack_bits32(packed_at_, packed_bytes_, (packed_index_ + at) * static_cast<std::uint64_t>(bits_), bits_,
                      buffer, k);
        for (std::size_t i = 0; i < k; ++i) {
          same += buffer[i] == value;
          top = std::max(top, buffer[i]);
        }
      }
      packed_index_ += take;
    } else {
      if (value_ == value) same += take;
      top = std::max(top, value_);
    }
    run_left_ -= take;
    done += take;
  }
  *equal = same;
  *largest = top;
  return done;
}

}  // namespace sluice::io::parquet
