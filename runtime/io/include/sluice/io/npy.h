// sluice/io/npy.h: NumPy .npy arrays, memory-mapped; a sample is a row along
// the first axis.
//
// Accepts format versions 1.0, 2.0 and 3.0, any header padding (the old
// 16-byte and the current 64-byte alignment), C and Fortran order, and the
// little-endian (or byte-order-free) types bool, int8..int64, uint8..uint64,
// float16, float32 and float64. Refused with an error naming the file: object
// arrays, structured and string dtypes, big-endian data, a bad magic or header,
// and a file shorter than its header says.
//
// The file is mapped read-only and shared: pages are page cache, read on
// touch, never copied into the process's heap. A C-order row is a view into
// the mapping; a Fortran-order row is gathered by copy_row().
//
// Thread safety: immutable after construction; const methods may run
// concurrently. A mapping made before fork() is valid in the children.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "sluice/dtype.h"

namespace sluice::io {

class NpyArray {
 public:
  // Maps `path`. Throws sluice::Error (file, offset, what is wrong).
  explicit NpyArray(std::string path);
  ~NpyArray();
  NpyArray(const NpyArray&) = delete;
  NpyArray& operator=(const NpyArray&) = delete;
  NpyArray(NpyArray&& other) noexcept;
  NpyArray& operator=(NpyArray&& other) noexcept;

  const std::string& path() const { return path_; }
  DType dtype() const { return dtype_; }
  const std::vector<std::int64_t>& shape() const { return shape_; }
  bool fortran_order() const { return fortran_; }
  std::size_t header_bytes() const { return data_offset_; }

  // Rows along the first axis (1 for a 0-d array).
  std::uint64_t rows() const { return rows_; }
  // The shape of one row: shape()[1:].
  std::vector<std::int64_t> row_shape() const;
  std::size_t row_bytes() const { return row_bytes_; }

  // Row i as C-order bytes, in place. Only for C-order arrays (or Fortran
  // arrays whose rows are contiguous: 1-d). Throws sluice::Error otherwise.
  std::span<const std::byte> row(std::uint64_t i) const;
  bool rows_contiguous() const { return !fortran_ || shape_.size() <= 1; }

  // Writes row i, in C order, into `out` (row_bytes() bytes). Any order.
  void copy_row(std::uint64_t i, std::span<std::byte> out) const;

  // The whole data block, in file order.
  std::span<const std::byte> data() const;

 private:
  void parse_header();
  std::string path_;
  const std::byte* map_ = nullptr;
  std::size_t map_bytes_ = 0;
  std::size_t data_offset_ = 0;
  DType dtype_ = DType::u8;
  std::size_t item_bytes_ = 1;
  std::vector<std::int64_t> shape_;
  bool fortran_ = false;
  std::uint64_t rows_ = 0;
  std::size_t row_bytes_ = 0;
};

}  // namespace sluice::io
