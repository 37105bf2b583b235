#include "parquet/metadata.h"

#include <cstring>

#include "parquet/thrift_compact.h"
#include "sluice/error.h"

namespace sluice::io::parquet {
namespace {

using Field = std::int16_t;

void parse_logical(ThriftReader& r, SchemaNode& node) {
  node.has_logical = true;
  r.begin_struct();
  Field id;
  TType t;
  while (r.next_field(id, t)) {
    if (t != TType::structure) {
      r.skip(t);
      continue;
    }
    switch (id) {
      case 1: node.logical = Logical::string; break;
      case 2: node.logical = Logical::other; node.other_logical = "map"; break;
      case 3: node.logical = Logical::other; node.other_logical = "list"; break;
      case 4: node.logical = Logical::enumeration; break;
      case 5: node.logical = Logical::decimal; break;
      case 6: node.logical = Logical::date; break;
      case 7: node.logical = Logical::time; break;
      case 8: node.logical = Logical::timestamp; break;
      case 10: node.logical = Logical::integer; break;
      case 11: node.logical = Logical::unknown; break;
      case 12: node.logical = Logical::json; break;
      case 13: node.logical = Logical::bson; break;
      case 14: node.logical = Logical::uuid; break;
      case 15: node.logical = Logical::float16; break;
      case 16: node.logical = Logical::other; node.other_logical = "variant"; break;
      case 17: node.logical = Logical::other; node.other_logical = "geometry"; break;
      case 18: node.logical = Logical::other; node.other_logical = "geography"; break;
      default: node.logical = Logical::other; node.other_logical = "logical type " + std::to_string(id); break;
    }
    // The member struct: decimal {scale, precision}, time/timestamp {utc,
    // unit}, integer {bitWidth, isSigned}; others are empty.
    r.begin_struct();
    Field mid;
    TType mt;
    while (r.next_field(mid, mt)) {
      if (id == 5 && mid == 1) node.scale = r.read_i32(mt);
      else if (id == 5 && mid == 2) node.precision = r.read_i32(mt);
      else if ((id == 7 || id == 8) && mid == 1) node.utc = r.read_bool(mt);
      else if ((id == 7 || id == 8) && mid == 2 && mt == TType::structure) {
        r.begin_struct();
        Field uid;
        TType ut;
        while (r.next_field(uid, ut)) {
          if (uid == 1) node.unit = TimeUnit::millis;
          else if (uid == 2) node.unit = TimeUnit::micros;
          else if (uid == 3) node.unit = TimeUnit::nanos;
          r.skip(ut);
        }
        r.end_struct();
      } else if (id == 10 && mid == 1) node.int_bits = static_cast<int>(r.read_int(mt));
      else if (id == 10 && mid == 2) node.int_signed = r.read_bool(mt);
      else r.skip(mt);
    }
    r.end_struct();
  }
  r.end_struct();
}

SchemaNode parse_schema_element(ThriftReader& r) {
  SchemaNode node;
  r.begin_struct();
  Field id;
  TType t;
  while (r.next_field(id, t)) {
    switch (id) {
      case 1: node.physical = r.read_i32(t); break;
      case 2: node.type_length = r.read_i32(t); break;
      case 3: node.repetition = r.read_i32(t); break;
      case 4: node.name = std::string(r.read_binary()); break;
      case 5: node.num_children = r.read_i32(t); break;
      case 6: node.converted = r.read_i32(t); break;
      case 7: node.scale = r.read_i32(t); break;
      case 8: node.precision = r.read_i32(t); break;
      case 10:
        if (t == TType::structure) parse_logical(r, node);
        else r.skip(t);
        break;
      default: r.skip(t);
    }
  }
  r.end_struct();
  return node;
}

ChunkMeta parse_column_meta(ThriftReader& r, ChunkMeta chunk) {
  r.begin_struct();
  Field id;
  TType t;
  while (r.next_field(id, t)) {
    switch (id) {
      case 1: chunk.physical = static_cast<Physical>(r.read_i32(t)); break;
      case 2: {
        TType e;
        const std::uint32_t n = r.read_list(e);
        for (std::uint32_t i = 0; i < n; ++i) chunk.encodings.push_back(r.read_i32(e));
        break;
      }
      case 3: {
        TType e;
        const std::uint32_t n = r.read_list(e);
        if (e != TType::binary) throw Error("thrift: path_in_schema is not a list of strings");
        for (std::uint32_t i = 0; i < n; ++i) {
          if (i > 0) chunk.path += '.';
          chunk.path += r.read_binary();
        }
        break;
      }
      case 4: chunk.codec = static_cast<Codec>(r.read_i32(t)); break;
      case 5: chunk.num_values = r.read_int(t); break;
      case 6: chunk.total_uncompressed = r.read_int(t); break;
      case 7: chunk.total_compressed = r.read_int(t); break;
      case 9: chunk.data_page_offset = r.read_int(t); break;
      case 11: chunk.dictionary_page_offset = r.read_int(t); break;
      case 12: {  // Statistics: only null_count (3) is read
        if (t != TType::structure) {
          r.skip(t);
          break;
        }
        r.begin_struct();
        Field sid;
        TType st;
        while (r.next_field(sid, st)) {
          if (sid == 3 && st == TType::i64) chunk.null_count = r.read_int(st);
          else r.skip(st);
        }
        r.end_struct();
        break;
      }
      default: r.skip(t);
    }
  }
  r.end_struct();
  return chunk;
}

ChunkMeta parse_column_chunk(ThriftReader& r) {
  ChunkMeta chunk;
  bool has_meta = false;
  r.begin_struct();
  Field id;
  TType t;
  while (r.next_field(id, t)) {
    if (id == 1 && t == TType::binary) chunk.file_path = std::string(r.read_binary());
    else if (id == 3 && t == TType::structure) chunk = parse_column_meta(r, std::move(chunk)), has_meta = true;
    else if (id == 8 || id == 9) chunk.encrypted = true, r.skip(t);
    else r.skip(t);
  }
  r.end_struct();
  if (!has_meta && !chunk.encrypted) throw Error("a column chunk has no metadata");
  return chunk;
}

RowGroupMeta parse_row_group(ThriftReader& r) {
  RowGroupMeta group;
  r.begin_struct();
  Field id;
  TType t;
  while (r.next_field(id, t)) {
    if (id == 1 && t == TType::list) {
      TType e;
      const std::uint32_t n = r.read_list(e);
      if (e != TType::structure) throw Error("thrift: row group columns are not structs");
      group.chunks.reserve(n);
      for (std::uint32_t i = 0; i < n; ++i) group.chunks.push_back(parse_column_chunk(r));
    } else if (id == 2) {
      group.total_bytes = r.read_int(t);
    } else if (id == 3) {
      group.num_rows = r.read_int(t);
    } else {
      r.skip(t);
    }
  }
  r.end_struct();
  return group;
}

// ConvertedType values (parquet.thrift).
enum Converted {
  kUtf8 = 0, kMap = 1, kMapKeyValue = 2, kList = 3, kEnum = 4, kDecimal = 5, kDate = 6, kTimeMillis = 7,
  kTimeMicros = 8, kTimestampMillis = 9, kTimestampMicros = 10, kUint8 = 11, kUint16 = 12, kUint32 = 13,
  kUint64 = 14, kInt8 = 15, kInt16 = 16, kInt32 = 17, kInt64 = 18, kJson = 19, kBson = 20, kInterval = 21,
};

// The logical meaning of a leaf, from its LogicalType or else its ConvertedType.
void resolve_logical(const SchemaNode& node, LeafColumn& leaf) {
  leaf.scale = node.scale;
  leaf.precision = node.precision;
  if (node.has_logical && node.logical != Logical::none) {
    leaf.logical = node.logical;
    leaf.int_bits = node.int_bits;
    leaf.int_signed = node.int_signed;
    leaf.unit = node.unit;
    leaf.utc = node.utc;
    // A logical type this reader does not know (geometry, a newer one)
    // leaves the values as their physical type, as the format asks.
    if (node.logical == Logical::other) leaf.logical = Logical::none;
    return;
  }
  switch (node.converted) {
    case kUtf8: leaf.logical = Logical::string; break;
    case kEnum: leaf.logical = Logical::enumeration; break;
    case kJson: leaf.logical = Logical::json; break;
    case kBson: leaf.logical = Logical::bson; break;
    case kDecimal: leaf.logical = Logical::decimal; break;
    case kDate: leaf.logical = Logical::date; break;
    case kTimeMillis: leaf.logical = Logical::time; leaf.unit = TimeUnit::millis; break;
    case kTimeMicros: leaf.logical = Logical::time; leaf.unit = TimeUnit::micros; break;
    // TIMESTAMP_MILLIS/MICROS read as isAdjustedToUTC = true (LogicalTypes.md)
    case kTimestampMillis: leaf.logical = Logical::timestamp; leaf.unit = TimeUnit::millis; leaf.utc = true; break;
    case kTimestampMicros: leaf.logical = Logical::timestamp; leaf.unit = TimeUnit::micros; leaf.utc = true; break;
    case kUint8: case kUint16: case kUint32: case kUint64:
    case kInt8: case kInt16: case kInt32: case kInt64: {
      static const int bits[] = {8, 16, 32, 64};
      const bool is_signed = node.converted >= kInt8;
      leaf.logical = Logical::integer;
      leaf.int_signed = is_signed;
      leaf.int_bits = bits[node.converted - (is_signed ? kInt8 : kUint8)];
      break;
    }
    case kInterval: leaf.logical = Logical::interval; break;
    default: break;
  }
}

// Checks that a physical type and its logical annotation go together.
void check_leaf(LeafColumn& leaf) {
  if (!leaf.unsupported.empty()) return;
  const Physical p = leaf.physical;
  const bool ints = p == Physical::int32 || p == Physical::int64;
  auto bad = [&] {
    leaf.unsupported = "the logical type " + logical_name(leaf) + " on " + physical_name(p);
  };
  switch (leaf.logical) {
    case Logical::integer:
      if (!ints || (leaf.int_bits != 8 && leaf.int_bits != 16 && leaf.int_bits != 32 && leaf.int_bits != 64) ||
          (p == Physical::int32 && leaf.int_bits == 64) || (p == Physical::int64 && leaf.int_bits != 64))
        bad();
      break;
    case Logical::date: if (p != Physical::int32) bad(); break;
    case Logical::time:
      if (!(p == Physical::int32 && leaf.unit == TimeUnit::millis) && !(p == Physical::int64 && leaf.unit != TimeUnit::millis)) bad();
      break;
    case Logical::timestamp: if (p != Physical::int64) bad(); break;
    case Logical::decimal:
      if (!ints && p != Physical::byte_array && p != Physical::fixed) bad();
      else if (leaf.precision > 38 || leaf.scale < 0 || leaf.scale > 38) bad();
      break;
    case Logical::float16: if (p != Physical::fixed || leaf.type_length != 2) bad(); break;
    case Logical::uuid: if (p != Physical::fixed || leaf.type_length != 16) bad(); break;
    case Logical::string: case Logical::enumeration: case Logical::json: case Logical::bson:
      if (p != Physical::byte_array && p != Physical::fixed) bad();
      break;
    case Logical::interval: if (p != Physical::fixed || leaf.type_length != 12) bad(); break;
    default: break;
  }
  if (p == Physical::fixed && leaf.type_length <= 0 && leaf.unsupported.empty())
    leaf.unsupported = "FIXED_LEN_BYTE_ARRAY with length " + std::to_string(leaf.type_length);
  if (static_cast<int>(p) < 0 || static_cast<int>(p) > 7) leaf.unsupported = "physical type " + std::to_string(static_cast<int>(p));
}

struct Walk {
  const std::vector<SchemaNode>& nodes;
  std::vector<LeafColumn>& leaves;
  std::vector<GroupNode>& groups;
  std::size_t next = 1;
  int depth = 0;

  // Walks the children of the group whose fields are `count`, under the
  // given levels. `list_name`: the LIST-annotated ancestor's dotted path.
  void children(int count, const std::string& prefix, int def, int rep, int list_def, const std::string& list_name,
                const std::string& why) {
    if (++depth > 100) throw Error("the schema is nested deeper than 100 levels");
    for (int c = 0; c < count; ++c) {
      if (next >= nodes.size()) throw Error("the schema lists fewer elements than its groups hold");
      const std::size_t at = next++;
      const SchemaNode& node = nodes[at];
      const std::string path = prefix.empty() ? node.name : prefix + "." + node.name;
      int d = def, r = rep, ld = list_def;
      if (node.repetition == 1) ++d;
      if (node.repetition == 2) ++d, ++r, ld = d;
      std::string reason = why;
      std::string lname = list_name;
      if (node.physical < 0) {  // a group
        if (node.num_children <= 0) throw Error("the group '" + path + "' has no children");
        const bool is_map = node.converted == kMap || node.converted == kMapKeyValue ||
                            (node.has_logical && node.other_logical == "map");
        const bool is_list = node.converted == kList || (node.has_logical && node.other_logical == "list");
        if (reason.empty() && is_map) reason = "maps";
        // A struct as a list's element: a repeated group of several fields,
        // or a group (not a list's own) within a repeated one, or the
        // format's legacy form of a one-field struct, a LIST's repeated group
        // named "array" or NAME_tuple. Its fields would read as lists of
        // their own, apart.
        const std::string list_own = list_name.substr(list_name.rfind('.') + 1);  // npos + 1 == 0: all of it
        const bool legacy_element = node.repetition == 2 && node.num_children == 1 && !is_list && !list_name.empty() &&
                                    prefix == list_name && (node.name == "array" || node.name == list_own + "_tuple");
        const bool struct_in_list =
            legacy_element || (node.repetition == 2 ? node.num_children > 1 : rep > 0 && !is_list);
        if (reason.empty() && struct_in_list) reason = "structs nested in lists";
        if (reason.empty() && r > 1) reason = "nested lists";
        if (is_list && lname.empty()) lname = path;
        groups.push_back({path, is_map ? "map" : is_list || node.repetition == 2 ? "list" : "struct", reason});
        children(node.num_children, path, d, r, ld, lname, reason);
        continue;
      }
      if (reason.empty() && r > 1) reason = "nested lists";
      LeafColumn leaf;
      leaf.path = path;
      leaf.name = lname.empty() ? path : lname;
      leaf.schema_index = at;
      leaf.physical = static_cast<Physical>(node.physical);
      leaf.type_length = node.type_length;
      leaf.max_def = d;
      leaf.max_rep = r;
      leaf.list_def = ld;
      resolve_logical(node, leaf);
      check_leaf(leaf);
      if (!reason.empty()) leaf.unsupported = reason;
      if (leaf.unsupported.empty() && r > 0 && leaf.physical == Physical::byte_array)
        leaf.unsupported = "lists of byte arrays";
      leaves.push_back(std::move(leaf));
    }
    --depth;
  }
};

}  // namespace

std::uint32_t footer_length(const std::byte* head, const std::byte* tail, std::uint64_t size) {
  if (size < 12) throw Error("too short for a Parquet file (" + std::to_string(size) + " bytes)");
  const char* magic = reinterpret_cast<const char*>(tail + 4);
  if (std::memcmp(magic, "PARE", 4) == 0)
    throw Error("the file is encrypted (Parquet modular encryption), which Sluice does not read");
  if (std::memcmp(head, "PAR1", 4) != 0) throw Error("not a Parquet file (no PAR1 magic)");
  if (std::memcmp(magic, "PAR1", 4) != 0)
    throw Error("a Parquet file without its footer: it ends after " + std::to_string(size) +
                " bytes without the closing PAR1 (cut short, or still being written)");
  std::uint32_t footer = 0;
  std::memcpy(&footer, tail, 4);
  if (footer > size - 12) throw Error("footer length " + std::to_string(footer) + " exceeds the file");
  return footer;
}

FileMeta parse_footer(const std::byte* footer, std::size_t footer_size) {
  ThriftReader r(footer, footer_size);
  FileMeta meta;
  r.begin_struct();
  Field id;
  TType t;
  while (r.next_field(id, t)) {
    switch (id) {
      case 1: meta.version = r.read_i32(t); break;
      case 2: {
        TType e;
        const std::uint32_t n = r.read_list(e);
        if (e != TType::structure) throw Error("thrift: schema is not a list of structs");
        meta.schema.reserve(n);
        for (std::uint32_t i = 0; i < n; ++i) meta.schema.push_back(parse_schema_element(r));
        break;
      }
      case 3: meta.num_rows = r.read_int(t); break;
      case 4: {
        TType e;
        const std::uint32_t n = r.read_list(e);
        if (e != TType::structure) throw Error("thrift: row_groups is not a list of structs");
        meta.row_groups.reserve(n);
        for (std::uint32_t i = 0; i < n; ++i) meta.row_groups.push_back(parse_row_group(r));
        break;
      }
      case 6: meta.created_by = std::string(r.read_binary()); break;
      case 8: meta.encrypted = true; r.skip(t); break;
      default: r.skip(t);
    }
  }
  r.end_struct();
  if (meta.encrypted) throw Error("the file's columns are encrypted (Parquet modular encryption), which Sluice does not read");
  if (meta.schema.empty()) throw Error("the footer has no schema");
  if (meta.num_rows < 0) throw Error("the footer says the file has " + std::to_string(meta.num_rows) + " rows");
  Walk walk{meta.schema, meta.leaves, meta.groups};
  walk.children(meta.schema[0].num_children, "", 0, 0, 0, "", "");
  if (walk.next != meta.schema.size()) throw Error("the schema has elements outside its root's children");
  std::int64_t rows = 0;
  for (std::size_t g = 0; g < meta.row_groups.size(); ++g) {
    RowGroupMeta& group = meta.row_groups[g];
    const std::string where = "row group " + std::to_string(g) + ": ";
    if (group.chunks.size() != meta.leaves.size())
      throw Error(where + std::to_string(group.chunks.size()) + " column chunks for " +
                  std::to_string(meta.leaves.size()) + " columns");
    if (group.num_rows < 0) throw Error(where + "a negative row count");
    if (rows > INT64_MAX - group.num_rows) throw Error(where + "the row count overflows");
    rows += group.num_rows;
    for (std::size_t c = 0; c < group.chunks.size(); ++c) {
      ChunkMeta& chunk = group.chunks[c];
      if (chunk.encrypted) throw Error(where + "column '" + meta.leaves[c].path + "' is encrypted, which Sluice does not read");
    }
  }
  // The row groups' counts are what the pages are checked against; some
  // writers leave the footer's total at 0.
  meta.num_rows = rows;
  return meta;
}

PageHeader parse_page_header(const std::byte* data, std::size_t size) {
  ThriftReader r(data, size);
  PageHeader h;
  bool has_type = false, has_v1 = false, has_v2 = false, has_dict = false;
  r.begin_struct();
  Field id;
  TType t;
  while (r.next_field(id, t)) {
    switch (id) {
      case 1: h.type = static_cast<PageType>(r.read_i32(t)); has_type = true; break;
      case 2: h.uncompressed_size = r.read_i32(t); break;
      case 3: h.compressed_size = r.read_i32(t); break;
      case 4: h.crc = static_cast<std::uint32_t>(r.read_i32(t)); h.has_crc = true; break;
      case 5:
      case 7:
      case 8: {
        if (t != TType::structure) throw Error("thrift: a page header's member is not a struct");
        (id == 5 ? has_v1 : id == 7 ? has_dict : has_v2) = true;
        r.begin_struct();
        Field mid;
        TType mt;
        while (r.next_field(mid, mt)) {
          if (mid == 1) h.num_values = r.read_i32(mt);
          else if (id == 5 && mid == 2) h.encoding = static_cast<Encoding>(r.read_i32(mt));
          else if (id == 5 && mid == 3) h.def_encoding = static_cast<Encoding>(r.read_i32(mt));
          else if (id == 5 && mid == 4) h.rep_encoding = static_cast<Encoding>(r.read_i32(mt));
          else if (id == 7 && mid == 2) h.encoding = static_cast<Encoding>(r.read_i32(mt));
          else if (id == 8 && mid == 2) h.num_nulls = r.read_i32(mt);
          else if (id == 8 && mid == 3) h.num_rows = r.read_i32(mt);
          else if (id == 8 && mid == 4) h.encoding = static_cast<Encoding>(r.read_i32(mt));
          else if (id == 8 && mid == 5) h.def_bytes = r.read_i32(mt);
          else if (id == 8 && mid == 6) h.rep_bytes = r.read_i32(mt);
          else if (id == 8 && mid == 7) h.v2_compressed = r.read_bool(mt);
          else r.skip(mt);
        }
        r.end_struct();
        break;
      }
      default: r.skip(t);
    }
  }
  r.end_struct();
  if (!has_type) throw Error("a page header has no type");
  if (h.compressed_size < 0 || h.uncompressed_size < 0) throw Error("a page header has a negative size");
  if (h.num_values < 0) throw Error("a page header has a negative value count");
  if (h.type == PageType::data && !has_v1) throw Error("a data page has no data page header");
  if (h.type == PageType::data_v2 && !has_v2) throw Error("a data page v2 has no header");
  if (h.type == PageType::dictionary && !has_dict) throw Error("a dictionary page has no header");
  if (h.type == PageType::data_v2 &&
      (h.def_bytes < 0 || h.rep_bytes < 0 || static_cast<std::int64_t>(h.def_bytes) + h.rep_bytes > h.compressed_size))
    throw Error("a data page v2's level lengths exceed the page");
  h.header_bytes = r.consumed();
  return h;
}

const char* physical_name(Physical p) {
  switch (p) {
    case Physical::boolean: return "BOOLEAN";
    case Physical::int32: return "INT32";
    case Physical::int64: return "INT64";
    case Physical::int96: return "INT96";
    case Physical::float32: return "FLOAT";
    case Physical::float64: return "DOUBLE";
    case Physical::byte_array: return "BYTE_ARRAY";
    case Physical::fixed: return "FIXED_LEN_BYTE_ARRAY";
  }
  return "an unknown physical type";
}

const char* codec_name(Codec c) {
  switch (c) {
    case Codec::none: return "UNCOMPRESSED";
    case Codec::snappy: return "SNAPPY";
    case Codec::gzip: return "GZIP";
    case Codec::lzo: return "LZO";
    case Codec::brotli: return "BROTLI";
    case Codec::lz4: return "LZ4";
    case Codec::zstd: return "ZSTD";
    case Codec::lz4_raw: return "LZ4_RAW";
  }
  return "an unknown codec";
}

const char* encoding_name(int e) {
  switch (e) {
    case 0: return "PLAIN";
    case 2: return "PLAIN_DICTIONARY";
    case 3: return "RLE";
    case 4: return "BIT_PACKED";
    case 5: return "DELTA_BINARY_PACKED";
    case 6: return "DELTA_LENGTH_BYTE_ARRAY";
    case 7: return "DELTA_BYTE_ARRAY";
    case 8: return "RLE_DICTIONARY";
    case 9: return "BYTE_STREAM_SPLIT";
  }
  return "an unknown encoding";
}

std::string logical_name(const LeafColumn& c) {
  static const char* units[] = {"millis", "micros", "nanos"};
  switch (c.logical) {
    case Logical::none: return "";
    case Logical::string: return "string";
    case Logical::enumeration: return "enum";
    case Logical::json: return "json";
    case Logical::bson: return "bson";
    case Logical::integer:
      return "int(" + std::to_string(c.int_bits) + (c.int_signed ? ", signed)" : ", unsigned)");
    case Logical::date: return "date";
    case Logical::time: return std::string("time(") + units[static_cast<int>(c.unit)] + ")";
    case Logical::timestamp:
      return std::string("timestamp(") + units[static_cast<int>(c.unit)] + (c.utc ? ", UTC" : ", local") + ")";
    case Logical::decimal: return "decimal(" + std::to_string(c.precision) + "," + std::to_string(c.scale) + ")";
    case Logical::float16: return "float16";
    case Logical::uuid: return "uuid";
    case Logical::unknown: return "null";
    case Logical::interval: return "interval";
    case Logical::other: return "other";
  }
  return "";
}

}  // namespace sluice::io::parquet
