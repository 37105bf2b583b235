// Internal: a reader of Thrift's compact protocol, the encoding of Parquet's
// footer and page headers (parquet.thrift). Only what Parquet uses: structs,
// lists, sets, maps, integers (varint, zigzag), doubles, binary, booleans.
//
// Bounds: every read checks the input's end and throws sluice::Error("...
// thrift: what"); nesting deeper than 64 levels and list sizes larger than
// the bytes left are refused, so hostile input neither recurses nor
// allocates without bound. Thread safety: one per thread; no allocation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace sluice::io::parquet {

enum class TType : std::uint8_t {
  stop = 0, bool_true = 1, bool_false = 2, i8 = 3, i16 = 4, i32 = 5, i64 = 6,
  dbl = 7, binary = 8, list = 9, set = 10, map = 11, structure = 12,
};

class ThriftReader {
 public:
  ThriftReader(const std::byte* data, std::size_t size) : p_(data), end_(data + size), begin_(data) {}

  // Struct traversal: begin_struct(), then next_field() until it returns
  // false (STOP), reading or skip()ing each field; end_struct() after.
  void begin_struct();
  void end_struct();
  bool next_field(std::int16_t& id, TType& type);

  std::int64_t read_int(TType type);   // i8, i16, i32, i64 fields or list elements
  std::int32_t read_i32(TType type);   // read_int, range-checked
  bool read_bool(TType type);          // a field's bool lives in its type
  bool read_bool_element();            // a list's bool is a byte
  double read_double();
  std::string_view read_binary();
  // A list or set header: element type and count (count <= bytes left).
  std::uint32_t read_list(TType& element);
  void skip(TType type);

  std::size_t consumed() const { return static_cast<std::size_t>(p_ - begin_); }

 private:
  std::uint64_t varint();
  std::uint8_t byte();
  [[noreturn]] void fail(const char* what) const;

  const std::byte* p_;
  const std::byte* end_;
  const std::byte* begin_;
  std::int16_t last_[64] = {};
  int depth_ = 0;
  bool pending_bool_ = false;
};

}  // namespace sluice::io::parquet
