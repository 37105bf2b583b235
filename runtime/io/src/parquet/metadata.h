// Internal: Parquet's file metadata (the footer) and page headers, as read
// from their Thrift compact encoding (parquet.thrift), and the leaf columns
// the schema tree describes.
//
// parse_footer() checks what Sluice can read and says plainly what it cannot:
// encrypted footers ("PARE"), a schema that does not add up, row groups whose
// column chunks lie outside the file. A leaf column whose shape Sluice does
// not read (maps, nested lists, structs in lists, an unknown physical type)
// is kept with its `unsupported` reason, so that only selecting it fails.
//
// Thread safety: plain values, immutable once parsed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace sluice::io::parquet {

enum class Physical : std::int32_t {
  boolean = 0, int32 = 1, int64 = 2, int96 = 3, float32 = 4, float64 = 5, byte_array = 6, fixed = 7,
};
enum class Codec : std::int32_t {
  none = 0, snappy = 1, gzip = 2, lzo = 3, brotli = 4, lz4 = 5, zstd = 6, lz4_raw = 7,
};
enum class Encoding : std::int32_t {
  plain = 0, plain_dictionary = 2, rle = 3, bit_packed = 4, delta_binary_packed = 5,
  delta_length_byte_array = 6, delta_byte_array = 7, rle_dictionary = 8, byte_stream_split = 9,
};
enum class PageType : std::int32_t { data = 0, index = 1, dictionary = 2, data_v2 = 3 };

// What a leaf's values mean beyond their physical type.
enum class Logical : std::uint8_t {
  none, string, enumeration, json, bson, integer, date, time, timestamp, decimal, float16, uuid, unknown,
  interval, other,
};
enum class TimeUnit : std::uint8_t { millis, micros, nanos };

struct SchemaNode {
  std::string name;
  int physical = -1;          // Physical, or -1 for a group
  int type_length = 0;
  int repetition = 0;         // 0 required, 1 optional, 2 repeated
  int num_children = 0;
  int converted = -1;         // ConvertedType, -1 if absent
  int scale = 0, precision = 0;
  Logical logical = Logical::none;
  bool has_logical = false;
  int int_bits = 0;           // Logical::integer
  bool int_signed = true;
  TimeUnit unit = TimeUnit::millis;
  bool utc = false;           // time/timestamp: isAdjustedToUTC (an instant, not a wall-clock reading)
  std::string other_logical;  // names a logical type Sluice does not read
};

struct LeafColumn {
  std::string name;           // dotted path; a list's own name for list<element>
  std::string path;           // dotted path_in_schema of the leaf
  std::size_t schema_index = 0;
  Physical physical = Physical::int32;
  int type_length = 0;
  Logical logical = Logical::none;
  int int_bits = 0;
  bool int_signed = true;
  TimeUnit unit = TimeUnit::millis;
  bool utc = false;           // time/timestamp: isAdjustedToUTC
  int scale = 0, precision = 0;
  int max_def = 0, max_rep = 0;
  int list_def = 0;           // definition level at which a list holds an element slot
  std::string unsupported;    // why Sluice cannot read it, or ""
};

// A group of the schema (a struct, a map, a list), by its dotted path: what
// a column named by a group's path is, for the error that refuses it.
struct GroupNode {
  std::string path;
  std::string kind;         // "map", "list" or "struct"
  std::string unsupported;  // why Sluice cannot read its leaves (a map's "maps"), or ""
};

struct ChunkMeta {
  Physical physical = Physical::int32;
  Codec codec = Codec::none;
  std::int64_t num_values = 0;
  std::int64_t total_compressed = 0;
  std::int64_t total_uncompressed = 0;
  std::int64_t data_page_offset = -1;
  std::int64_t dictionary_page_offset = -1;
  std::string path;           // dotted path_in_schema
  std::string file_path;      // a chunk in another file: refused
  bool encrypted = false;
  std::vector<int> encodings;
  std::int64_t null_count = -1;  // the writer's statistics; -1: not written
};

struct RowGroupMeta {
  std::int64_t num_rows = 0;
  std::int64_t total_bytes = 0;
  std::vector<ChunkMeta> chunks;
};

struct FileMeta {
  std::int32_t version = 0;
  std::int64_t num_rows = 0;
  std::string created_by;
  std::vector<SchemaNode> schema;
  std::vector<LeafColumn> leaves;
  std::vector<GroupNode> groups;  // in schema order
  std::vector<RowGroupMeta> row_groups;
  bool encrypted = false;
};

// The footer's length, from a file's first 4 bytes `head`, its last 8
// `tail` and its size; checks the magic numbers. Throws sluice::Error
// (without the file's name: callers add it).
std::uint32_t footer_length(const std::byte* head, const std::byte* tail, std::uint64_t size);
// Reads the footer (the FileMetaData just before the tail). Throws sluice::Error.
FileMeta parse_footer(const std::byte* footer, std::size_t footer_size);

struct PageHeader {
  PageType type = PageType::data;
  std::int32_t uncompressed_size = 0;
  std::int32_t compressed_size = 0;
  bool has_crc = false;
  std::uint32_t crc = 0;
  std::int32_t num_values = 0;
  std::int32_t num_nulls = 0;       // v2
  std::int32_t num_rows = 0;        // v2
  Encoding encoding = Encoding::plain;
  Encoding def_encoding = Encoding::rle;
  Encoding rep_encoding = Encoding::rle;
  std::int32_t def_bytes = 0;       // v2
  std::int32_t rep_bytes = 0;       // v2
  bool v2_compressed = true;
  std::size_t header_bytes = 0;     // the header's own length
};

// Reads one page header from [data, data + size). Throws sluice::Error.
PageHeader parse_page_header(const std::byte* data, std::size_t size);

const char* physical_name(Physical p);
const char* codec_name(Codec c);
const char* encoding_name(int e);
// "string", "timestamp(micros)", "decimal(9,2)", "int(8, unsigned)", or "".
std::string logical_name(const LeafColumn& c);

}  // namespace sluice::io::parquet
