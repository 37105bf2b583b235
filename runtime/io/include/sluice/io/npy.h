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
// .npz archives (numpy.savez, numpy.savez_compressed): NpzArchive reads the
// zip central directory (zip64 extra fields included, as numpy writes them)
// and opens a member as an NpyArray. A stored member stays a view into the
// archive's mapping (no copy; its rows need not be aligned); a deflated one
// is inflated once into memory the array owns. Each member's CRC-32 is
// checked when it is opened (a stored member's pages are read once for it).
// Errors name the archive and the member.
//
// Thread safety: immutable after construction; const methods may run
// concurrently. A mapping made before fork() is valid in the children.
#pragma once

#include "sluice/export.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/dtype.h"

namespace sluice::io {

class SLUICE_API NpyArray {
 public:
  // Maps `path`. Throws sluice::Error (file, offset, what is wrong); a .npz
  // archive is refused with the names of its members.
  explicit NpyArray(std::string path);
  // Member `member` of the .npz archive `path` ("x" or "x.npy"): the same as
  // NpzArchive(path).array(member).
  NpyArray(std::string path, std::string_view member);
  NpyArray(const NpyArray&) = delete;
  NpyArray& operator=(const NpyArray&) = delete;
  NpyArray(NpyArray&& other) noexcept = default;
  NpyArray& operator=(NpyArray&& other) noexcept = default;

  // The file; for a .npz member, the archive.
  const std::string& path() const { return path_; }
  // The .npz member's name ("x.npy"); empty for a .npy file.
  const std::string& member() const { return member_; }
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
  friend class NpzArchive;
  // A .npy stream held by `storage` (a mapping or inflated memory).
  NpyArray(std::string path, std::string member, std::shared_ptr<const std::byte> storage,
           std::size_t bytes);
  void parse_header();
  // "PATH" or "PATH: member 'NAME'", for messages.
  std::string where() const;
  std::string path_;
  std::string member_;
  std::shared_ptr<const std::byte> storage_;  // keeps map_ valid
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

// One member of a .npz archive, as its central directory lists it.
struct SLUICE_API NpzMember {
  std::string name;              // "x.npy"
  bool deflated = false;         // false: stored
  std::uint64_t compressed = 0;  // bytes in the archive
  std::uint64_t size = 0;        // bytes of the .npy stream
  std::uint32_t crc32 = 0;
  std::uint64_t header_offset = 0;  // of the member's local header
};

class SLUICE_API NpzArchive {
 public:
  // Maps `path` and reads its central directory. Throws sluice::Error naming
  // the file: not a zip, truncated, a bad directory entry.
  explicit NpzArchive(std::string path);

  const std::string& path() const { return path_; }
  const std::vector<NpzMember>& members() const { return members_; }
  // "x, y": the members' names without ".npy", for messages.
  std::string member_list() const;

  // The member named `name` ("x" or "x.npy"), CRC-checked; stored members are
  // views into the archive's mapping, which the array keeps alive. Throws
  // sluice::Error naming the file and the member.
  NpyArray array(std::string_view name) const;

 private:
  std::string path_;
  std::shared_ptr<const std::byte> map_;
  std::size_t map_bytes_ = 0;
  std::vector<NpzMember> members_;
};

// Whether `head` (a file's first bytes) starts like a zip archive ("PK\3\4",
// or "PK\5\6" for an empty one).
SLUICE_API bool looks_like_zip(std::span<const std::byte> head);

}  // namespace sluice::io
