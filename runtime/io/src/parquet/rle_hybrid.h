// Internal: Parquet's RLE / bit-packed hybrid encoding (definition and
// repetition levels, dictionary indices, RLE booleans) and the little-endian
// bit unpacking it shares with DELTA_BINARY_PACKED.
//
// Errors: a run that reaches past its input, or a bit width over 32, throws
// sluice::Error. Thread safety: one decoder per thread; no allocation.
#pragma once

#include <cstddef>
#include <cstdint>

namespace sluice::io::parquet {

// Values [0, n) of width `bits` (0..64) packed LSB first from bit `first`
// of data[0, size) into out. The caller checks that they lie inside.
void unpack_bits(const std::byte* data, std::size_t size, std::uint64_t first, int bits, std::uint64_t* out,
                 std::size_t n);
void unpack_bits32(const std::byte* data, std::size_t size, std::uint64_t first, int bits, std::uint32_t* out,
                   std::size_t n);

// Reads a ULEB128 varint from [*p, end), advancing *p. Throws on overrun.
std::uint64_t read_uleb(const std::byte*& p, const std::byte* end);

class RleDecoder {
 public:
  RleDecoder() = default;
  RleDecoder(const std::byte* data, std::size_t size, int bits);

  // Up to n values into out; fewer only where the input ends.
  std::size_t get(std::uint32_t* out, std::size_t n);
  // Reads up to n values without keeping them: how many there were, with
  // how many equal `value` in *equal and the largest in *largest (a run is
  // counted whole, not value by value).
  std::size_t count(std::size_t n, std::uint32_t value, std::size_t* equal, std::uint32_t* largest);
  // The end of what has been read so far.
  const std::byte* position() const { return p_; }

 private:
  bool next_run();
  const std::byte* p_ = nullptr;
  const std::byte* end_ = nullptr;
  int bits_ = 0;
  std::uint64_t run_left_ = 0;     // values left in the current run
  bool packed_ = false;
  std::uint32_t value_ = 0;        // an RLE run's value
  const std::byte* packed_at_ = nullptr;  // a bit-packed run's bytes
  std::size_t packed_bytes_ = 0;
  std::uint64_t packed_index_ = 0;
};

}  // namespace sluice::io::parquet
