// Internal: decodes one column chunk (one leaf column of one row group) into
// the values Sluice hands out, row by row.
//
// Pages are read from the file's bytes: their CRCs checked where written,
// decompressed (codec.h), their repetition and definition levels decoded
// (rle_hybrid.h), their values decoded by encoding (PLAIN, dictionaries,
// RLE booleans, the delta encodings, BYTE_STREAM_SPLIT) and converted to
// the column's output type (see ColumnValues).
//
// Errors: throws sluice::Error saying what is wrong (the page's offset, the
// encoding or feature); callers add the file and column. Every length is
// checked against the chunk, page and row group, so corrupt input neither
// reads out of bounds nor allocates past what its row group's size allows.
//
// Hot path: a ChunkDecoder keeps its scratch and ColumnValues keep their
// buffers between row groups; once they have grown to a row group's size,
// decoding allocates nothing. Thread safety: one per thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "parquet/byte_buffer.h"
#include "parquet/metadata.h"
#include "sluice/dtype.h"

namespace sluice::io::parquet {

// How a leaf column's values reach a sample.
struct OutputType {
  std::optional<DType> dtype;  // none: bytes (strings, binary, UUID, fixed bytes)
  std::size_t width = 0;       // bytes per element (1 for bytes)
  bool variable = false;       // rows differ in length: nullable, lists, bytes
};
OutputType output_type(const LeafColumn& leaf);

// One row group's values of one column. Row r is data[r * width, (r + 1) *
// width) when dense (a fixed-size type with no null in this row group), else
// data[begins[r], ends[r]). A null row is empty; in a string or byte column
// (where an empty value is not a null) nulls[r] is 1 for a null row (nulls
// is empty when the row group has none).
// Strings decoded from PLAIN pages stay where their page was decompressed
// (or copied) into data, between their length prefixes.
struct ColumnValues {
  ByteBuffer data;
  std::vector<std::uint64_t> begins, ends;
  std::vector<std::uint8_t> nulls;
  std::uint64_t rows = 0;
  bool dense = false;
};

// Where a column chunk's pages lie in a file of `file_size` bytes: [first,
// first + bytes). Throws sluice::Error when outside the file.
struct ChunkRange {
  std::uint64_t first = 0, bytes = 0;
};
ChunkRange chunk_range(const ChunkMeta& chunk, std::uint64_t file_size);

class ChunkDecoder {
 public:
  // A chunk that decodes to more than `max_bytes` (values, offsets and its
  // dictionary) is refused.
  explicit ChunkDecoder(std::uint64_t max_bytes = 1ull << 32) : max_bytes_(max_bytes) {}

  // Decodes leaf `column` of row group `group`, whose pages `chunk` holds
  // (the file's bytes at chunk_range(); `first` their offset, for messages).
  void decode(const FileMeta& meta, std::size_t group, std::size_t column, const std::byte* chunk,
              std::size_t bytes, std::uint64_t first, ColumnValues& out);

 private:
  void read_dictionary(const PageHeader& h, const std::byte* body, std::size_t size);
  void read_data_page(const PageHeader& h, const std::byte* page, std::size_t size);
  // Decodes n values of `encoding` at [p, p + size) into the output.
  void decode_values(Encoding encoding, const std::byte* p, std::size_t size, std::size_t n);
  void decode_plain(const std::byte* p, std::size_t size, std::size_t n, bool dictionary);
  void decode_indices(const std::byte* p, std::size_t size, std::size_t n);
  void append_fixed(const std::byte* phys, std::size_t n);  // converts phys values into the output
  void append_bytes(const std::byte* p, std::size_t len);
  std::uint64_t decoded_bytes() const;

  std::uint64_t max_bytes_;
  const LeafColumn* leaf_ = nullptr;
  const ChunkMeta* chunk_ = nullptr;
  OutputType type_;
  std::size_t phys_width_ = 0;  // bytes per physical value (fixed types)
  ColumnValues* out_ = nullptr;
  // Byte arrays of the chunk: value i is out data [value_begins_[i], value_ends_[i]).
  std::vector<std::uint64_t> value_begins_, value_ends_;
  bool in_place_ = false;       // the page being decoded was put into out data
  // Row starts, in values of the chunk, while rows_tracked_ (always with
  // repetition levels; without, from the first null on).
  std::vector<std::uint64_t> row_starts_;
  bool rows_tracked_ = false;
  std::uint64_t values_ = 0;    // non-null values decoded in the chunk
  std::uint64_t levels_ = 0;    // level entries (values incl. nulls) decoded
  bool has_dictionary_ = false;
  ByteBuffer dict_data_;                      // converted fixed values, or bytes
  std::vector<std::uint64_t> dict_begins_, dict_ends_;  // byte arrays in dict_data_
  std::size_t dict_count_ = 0;
  std::vector<std::byte> page_;               // a decompressed page
  std::vector<std::byte> phys_;               // physical values before conversion
  std::vector<std::uint32_t> def_, rep_, indices_;
  std::vector<std::int64_t> delta_, delta2_;
  std::vector<std::byte> bytes_scratch_;
  std::vector<std::uint64_t> ends_scratch_;
};

}  // namespace sluice::io::parquet
