#include "parquet/column_chunk.h"

#include <zlib.h>

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <string>

#include "parquet/codec.h"
#include "parquet/delta.h"
#include "parquet/rle_hybrid.h"
#include "sluice/error.h"

namespace sluice::io::parquet {
namespace {

// A page may hold at most this many values, and decompress to at most this
// many bytes: bounds on what a corrupt header can make us allocate (with
// ChunkDecoder's limit on a whole chunk's decoded bytes).
constexpr std::int64_t kMaxPageValues = 1ll << 24;
constexpr std::int64_t kMaxPageBytes = 1ll << 30;

int level_bits(int max_level) { return max_level == 0 ? 0 : 32 - std::countl_zero(static_cast<std::uint32_t>(max_level)); }

std::size_t physical_width(const LeafColumn& leaf) {
  switch (leaf.physical) {
    case Physical::boolean: return 1;
    case Physical::int32: case Physical::float32: return 4;
    case Physical::int64: case Physical::float64: return 8;
    case Physical::int96: return 12;
    case Physical::fixed: return static_cast<std::size_t>(leaf.type_length);
    case Physical::byte_array: return 0;
  }
  return 0;
}

std::uint32_t le32(const std::byte* p) {
  std::uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// unscaled / 10^scale, the double nearest the decimal's exact value. One
// division of two exact doubles is rounded once, correctly: so when the
// unscaled integer has at most 53 bits and 10^scale at most 22 digits.
// Past that (decimal(38) and wide decimal(18) values) converting, then
// dividing would round twice (off by one unit in the last place): the
// digits go through strtod, which rounds the exact value once.
double decimal_to_double(__int128 unscaled, int scale) {
  static constexpr double kPowers[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                       1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
  constexpr __int128 kExact = __int128{1} << 53;
  if (unscaled >= -kExact && unscaled <= kExact && scale >= 0 && scale <= 22)
    return static_cast<double>(unscaled) / kPowers[scale];
  // The digits of |unscaled| (at most 39), its sign, "e-SCALE".
  unsigned __int128 magnitude =
      unscaled < 0 ? -static_cast<unsigned __int128>(unscaled) : static_cast<unsigned __int128>(unscaled);
  char digits[40];
  int n = 0;
  do {
    digits[n++] = static_cast<char>('0' + static_cast<int>(magnitude % 10));
    magnitude /= 10;
  } while (magnitude != 0);
  char text[64];
  std::size_t k = 0;
  if (unscaled < 0) text[k++] = '-';
  while (n > 0) text[k++] = digits[--n];
  std::snprintf(text + k, sizeof text - k, "e%d", -scale);
  return std::strtod(text, nullptr);
}

// A big-endian two's complement integer of up to 16 bytes, over 10^scale.
double decimal_value(const std::byte* p, std::size_t len, int scale) {
  if (len > 16) throw Error("a decimal of " + std::to_string(len) + " bytes (more than 16)");
  if (len == 0) return 0.0;
  __int128 v = static_cast<std::int8_t>(p[0]);  // sign-extends
  for (std::size_t i = 1; i < len; ++i) v = v * 256 + static_cast<std::uint8_t>(p[i]);
  return decimal_to_double(v, scale);
}

}  // namespace

OutputType output_type(const LeafColumn& leaf) {
  OutputType t;
  const bool decimal = leaf.logical == Logical::decimal;
  switch (leaf.physical) {
    case Physical::boolean: t.dtype = DType::boolean; break;
    case Physical::int32:
      if (decimal) t.dtype = DType::f64;
      else if (leaf.logical == Logical::integer && leaf.int_bits == 8) t.dtype = leaf.int_signed ? DType::i8 : DType::u8;
      else if (leaf.logical == Logical::integer && leaf.int_bits == 16) t.dtype = leaf.int_signed ? DType::i16 : DType::u16;
      else if (leaf.logical == Logical::integer && !leaf.int_signed) t.dtype = DType::u32;
      else t.dtype = DType::i32;
      break;
    case Physical::int64:
      t.dtype = decimal ? DType::f64 : (leaf.logical == Logical::integer && !leaf.int_signed) ? DType::u64 : DType::i64;
      break;
    case Physical::int96: t.dtype = DType::i64; break;
    case Physical::float32: t.dtype = DType::f32; break;
    case Physical::float64: t.dtype = DType::f64; break;
    case Physical::fixed:
      if (leaf.logical == Logical::float16) t.dtype = DType::f16;
      else if (decimal) t.dtype = DType::f64;
      break;
    case Physical::byte_array:
      if (decimal) t.dtype = DType::f64;
      break;
  }
  t.width = t.dtype ? dtype_size(*t.dtype) : 1;
  t.variable = !t.dtype || leaf.max_def > 0 || leaf.max_rep > 0;
  return t;
}

ChunkRange chunk_range(const ChunkMeta& chunk, std::uint64_t file_size) {
  std::int64_t start = chunk.data_page_offset;
  // Some writers put 0 here for no dictionary page.
  if (chunk.dictionary_page_offset > 0 && chunk.dictionary_page_offset < start) start = chunk.dictionary_page_offset;
  const std::int64_t length = chunk.total_compressed;
  if (start < 4 || length < 0 || static_cast<std::uint64_t>(start) > file_size ||
      static_cast<std::uint64_t>(length) > file_size - static_cast<std::uint64_t>(start))
    throw Error("the column chunk at byte " + std::to_string(start) + " (" + std::to_string(length) +
                " bytes) lies outside the file");
  return {static_cast<std::uint64_t>(start), static_cast<std::uint64_t>(length)};
}

void ChunkDecoder::decode(const FileMeta& meta, std::size_t group, std::size_t column, const std::byte* chunk,
                          std::size_t bytes, std::uint64_t first, ColumnValues& out) {
  leaf_ = &meta.leaves.at(column);
  const RowGroupMeta& rg = meta.row_groups.at(group);
  chunk_ = &rg.chunks.at(column);
  if (!leaf_->unsupported.empty()) throw Error(leaf_->unsupported + " are not supported");
  if (!chunk_->file_path.empty()) throw Error("the column chunk lives in another file (" + chunk_->file_path + ")");
  if (chunk_->physical != leaf_->physical)
    throw Error(std::string("the column chunk is ") + physical_name(chunk_->physical) + ", the schema says " +
                physical_name(leaf_->physical));
  type_ = output_type(*leaf_);
  phys_width_ = physical_width(*leaf_);
  out_ = &out;
  out.data.clear();
  out.begins.clear();
  out.ends.clear();
  out.nulls.clear();
  out.rows = 0;
  value_begins_.clear();
  value_ends_.clear();
  row_starts_.clear();
  rows_tracked_ = leaf_->max_rep > 0;
  values_ = levels_ = 0;
  has_dictionary_ = false;
  dict_data_.clear();
  dict_begins_.clear();
  dict_ends_.clear();
  dict_count_ = 0;
  if (chunk_->num_values < 0) throw Error("the column chunk has a negative value count");
  if (leaf_->max_rep == 0 && chunk_->num_values != rg.num_rows)
    throw Error("the column chunk holds " + std::to_string(chunk_->num_values) + " values for " +
                std::to_string(rg.num_rows) + " rows");
  // Room for the chunk's values up front, so the buffer does not grow (and
  // copy itself) page by page: strings take at most the chunk's
  // uncompressed bytes, fixed-size values one width per value.
  const std::uint64_t expect = !type_.dtype ? static_cast<std::uint64_t>(std::max<std::int64_t>(chunk_->total_uncompressed, 0))
                                            : static_cast<std::uint64_t>(chunk_->num_values) * type_.width;
  out.data.reserve(static_cast<std::size_t>(std::min(expect, max_bytes_)));
  const std::byte* p = chunk;
  const std::byte* end = chunk + bytes;
  while (levels_ < static_cast<std::uint64_t>(chunk_->num_values) && p < end) {
    const std::uint64_t at = first + static_cast<std::uint64_t>(p - chunk);  // in the file, for messages
    try {
      const PageHeader h = parse_page_header(p, static_cast<std::size_t>(end - p));
      const std::byte* body = p + h.header_bytes;
      if (h.compressed_size > end - body) throw Error("the page runs past its column chunk");
      if (h.has_crc) {
        const auto crc = static_cast<std::uint32_t>(
            crc32(0, reinterpret_cast<const Bytef*>(body), static_cast<uInt>(h.compressed_size)));
        if (crc != h.crc) throw Error("page CRC mismatch (the page is corrupt)");
      }
      if (h.uncompressed_size > kMaxPageBytes || static_cast<std::uint64_t>(h.uncompressed_size) > max_bytes_)
        throw Error("a page of " + std::to_string(h.uncompressed_size) + " bytes, more than a column chunk may decode to");
      if (h.type == PageType::dictionary) {
        if (levels_ > 0 || has_dictionary_) throw Error("a dictionary page after the first page");
        read_dictionary(h, body, static_cast<std::size_t>(h.compressed_size));
      } else if (h.type == PageType::data || h.type == PageType::data_v2) {
        read_data_page(h, body, static_cast<std::size_t>(h.compressed_size));
      }
      p = body + h.compressed_size;
    } catch (const Error& e) {
      throw Error("page at byte " + std::to_string(at) + ": " + e.what());
    }
  }
  if (levels_ != static_cast<std::uint64_t>(chunk_->num_values))
    throw Error("the column chunk says it holds " + std::to_string(chunk_->num_values) + " values, its pages hold " +
                std::to_string(levels_));
  // Without repetition each level is a row; row_starts_ is kept only once a
  // null has been seen (until then row r is value r).
  const std::uint64_t rows = leaf_->max_rep == 0 ? levels_ : row_starts_.size();
  if (rows != static_cast<std::uint64_t>(rg.num_rows))
    throw Error("the column chunk holds " + std::to_string(rows) + " rows, its row group " +
                std::to_string(rg.num_rows));
  out.rows = rows;
  out.dense = type_.dtype && !rows_tracked_;
  if (out.dense) return;
  if (!rows_tracked_) {  // bytes, one value per row
    std::swap(out.begins, value_begins_);
    std::swap(out.ends, value_ends_);
    return;
  }
  out.begins.resize(rows);
  out.ends.resize(rows);
  for (std::uint64_t r = 0; r < rows; ++r) {
    const std::uint64_t v = row_starts_[r], next = r + 1 < rows ? row_starts_[r + 1] : values_;
    if (type_.dtype) {
      out.begins[r] = v * type_.width;
      out.ends[r] = next * type_.width;
    } else if (next > v) {  // bytes: one value (lists of byte arrays are refused)
      out.begins[r] = value_begins_[v];
      out.ends[r] = value_ends_[v];
    } else {
      out.begins[r] = out.ends[r] = 0;
      if (!type_.dtype) {  // a null string: told apart from an empty one
        out.nulls.resize(rows);
        out.nulls[r] = 1;
      }
    }
  }
}

std::uint64_t ChunkDecoder::decoded_bytes() const {
  return out_->data.size() + 16 * (value_ends_.size() + dict_ends_.size()) + 8 * row_starts_.size() +
         dict_data_.size();
}

void ChunkDecoder::read_dictionary(const PageHeader& h, const std::byte* body, std::size_t size) {
  if (h.encoding != Encoding::plain && h.encoding != Encoding::plain_dictionary)
    throw Error(std::string("a dictionary page in ") + encoding_name(static_cast<int>(h.encoding)) + ", not PLAIN");
  if (h.num_values > kMaxPageValues) throw Error("a dictionary of more than 2^24 values");
  if (static_cast<std::uint64_t>(h.num_values) * (8 + type_.width) > max_bytes_)
    throw Error("the dictionary decodes to more than " + std::to_string(max_bytes_ >> 20) + " MiB");
  const std::byte* data = body;
  if (chunk_->codec != Codec::none) {
    page_.resize(static_cast<std::size_t>(h.uncompressed_size));
    decompress(chunk_->codec, {body, size}, page_);
    data = page_.data();
    size = page_.size();
  }
  has_dictionary_ = true;
  dict_count_ = static_cast<std::size_t>(h.num_values);
  decode_plain(data, size, dict_count_, true);
}

void ChunkDecoder::read_data_page(const PageHeader& h, const std::byte* body, std::size_t size) {
  const std::int64_t n = h.num_values;
  if (n > kMaxPageValues) throw Error("a page of more than 2^24 values");
  // Levels, indices and the values themselves, before any is allocated.
  if (static_cast<std::uint64_t>(n) * (12 + type_.width) > max_bytes_ - std::min(max_bytes_, decoded_bytes()))
    throw Error("the column chunk decodes to more than " + std::to_string(max_bytes_ >> 20) + " MiB");
  if (levels_ + static_cast<std::uint64_t>(n) > static_cast<std::uint64_t>(chunk_->num_values))
    throw Error("the pages hold more values than the column chunk says (" + std::to_string(chunk_->num_values) + ")");
  const int max_def = leaf_->max_def, max_rep = leaf_->max_rep;
  const std::byte* data = nullptr;  // the values (levels of v1 pages first)
  std::size_t data_size = 0;
  const std::byte* rep_at = nullptr;
  const std::byte* def_at = nullptr;
  std::size_t rep_size = 0, def_size = 0;
  // PLAIN strings are decompressed (or copied) straight into the output,
  // where they stay; other pages into page_ (uncompressed ones are read
  // where they lie).
  in_place_ = !type_.dtype && leaf_->physical == Physical::byte_array && h.encoding == Encoding::plain;
  auto inflate = [&](const std::byte* src, std::size_t src_size, std::size_t out_size, bool compressed) {
    if (!compressed && !in_place_) {
      data = src;
      data_size = src_size;
      return;
    }
    std::byte* dst;
    if (in_place_) {
      dst = out_->data.extend(out_size);
    } else {
      page_.resize(out_size);
      dst = page_.data();
    }
    if (compressed) {
      if (out_size > 0 || src_size > 0) decompress(chunk_->codec, {src, src_size}, {dst, out_size});
    } else {
      if (src_size != out_size) throw Error("an uncompressed page whose sizes differ");
      if (src_size > 0) std::memcpy(dst, src, src_size);
    }
    data = dst;
    data_size = out_size;
  };
  if (h.type == PageType::data_v2) {
    rep_at = body;
    rep_size = static_cast<std::size_t>(h.rep_bytes);
    def_at = body + rep_size;
    def_size = static_cast<std::size_t>(h.def_bytes);
    const std::size_t levels = rep_size + def_size;
    const bool compressed = h.v2_compressed && chunk_->codec != Codec::none;
    if (static_cast<std::size_t>(h.uncompressed_size) < levels) throw Error("a page v2 smaller than its levels");
    inflate(body + levels, size - levels, compressed ? static_cast<std::size_t>(h.uncompressed_size) - levels : size - levels,
            compressed);
  } else {
    const bool compressed = chunk_->codec != Codec::none;
    inflate(body, size, compressed ? static_cast<std::size_t>(h.uncompressed_size) : size, compressed);
    auto take_levels = [&](Encoding encoding, const std::byte*& at, std::size_t& len, const char* what) {
      if (encoding != Encoding::rle)
        throw Error(std::string(what) + " levels in " + encoding_name(static_cast<int>(encoding)) +
                    ", which is not supported (only RLE)");
      if (data_size < 4) throw Error(std::string(what) + " levels run past the page");
      len = le32(data);
      if (len > data_size - 4) throw Error(std::string(what) + " levels run past the page");
      at = data + 4;
      data += 4 + len;
      data_size -= 4 + len;
    };
    if (max_rep > 0) take_levels(h.rep_encoding, rep_at, rep_size, "repetition");
    if (max_def > 0) take_levels(h.def_encoding, def_at, def_size, "definition");
  }
  const auto count = static_cast<std::size_t>(n);
  auto read_levels = [&](std::vector<std::uint32_t>& levels, const std::byte* at, std::size_t len, int max,
                         const char* what) {
    levels.resize(count);
    RleDecoder decoder(at, len, level_bits(max));
    if (decoder.get(levels.data(), count) != count)
      throw Error(std::string("fewer ") + what + " levels than the page's " + std::to_string(n) + " values");
    if (max == (1 << level_bits(max)) - 1) return;  // no wider value fits the bit width
    for (std::uint32_t l : levels)
      if (l > static_cast<std::uint32_t>(max))
        throw Error(std::string("a ") + what + " level of " + std::to_string(l) + " (the column's maximum is " +
                    std::to_string(max) + ")");
  };
  if (max_rep > 0) read_levels(rep_, rep_at, rep_size, max_rep, "repetition");
  std::size_t present = count;
  if (max_def > 0 && !rows_tracked_) {
    // Without repetition, until a null shows up only the count matters: the
    // levels are counted run by run, not stored.
    RleDecoder decoder(def_at, def_size, level_bits(max_def));
    std::uint32_t largest = 0;
    if (decoder.count(count, static_cast<std::uint32_t>(max_def), &present, &largest) != count)
      throw Error("fewer definition levels than the page's " + std::to_string(n) + " values");
    if (largest > static_cast<std::uint32_t>(max_def))
      throw Error("a definition level of " + std::to_string(largest) + " (the column's maximum is " +
                  std::to_string(max_def) + ")");
    if (present < count) read_levels(def_, def_at, def_size, max_def, "definition");
  } else if (max_def > 0) {
    read_levels(def_, def_at, def_size, max_def, "definition");
    present = static_cast<std::size_t>(
        std::count(def_.begin(), def_.begin() + static_cast<std::ptrdiff_t>(count), static_cast<std::uint32_t>(max_def)));
  }
  if (max_rep == 0 && !rows_tracked_ && present < count) {
    // The chunk's first null: rows so far each held their value.
    rows_tracked_ = true;
    row_starts_.resize(levels_);
    std::iota(row_starts_.begin(), row_starts_.end(), std::uint64_t{0});
  }
  if (rows_tracked_) {
    std::uint64_t v = values_;
    for (std::size_t k = 0; k < count; ++k) {
      const std::uint32_t d = max_def > 0 ? def_[k] : 0;
      if (max_rep == 0 || rep_[k] == 0) {
        row_starts_.push_back(v);
      } else if (levels_ == 0 && k == 0) {
        throw Error("the column chunk's first repetition level is not 0");
      }
      if (d == static_cast<std::uint32_t>(max_def)) ++v;
      else if (max_rep > 0 && d >= static_cast<std::uint32_t>(leaf_->list_def))
        throw Error("null elements inside lists are not supported");
    }
  } else if (max_rep > 0 && levels_ == 0 && count > 0 && rep_[0] != 0) {
    throw Error("the column chunk's first repetition level is not 0");
  }
  decode_values(h.encoding, data, data_size, present);
  values_ += present;
  levels_ += count;
  if (decoded_bytes() > max_bytes_)
    throw Error("the column chunk decodes to more than " + std::to_string(max_bytes_ >> 20) + " MiB");
}

void ChunkDecoder::decode_values(Encoding encoding, const std::byte* p, std::size_t size, std::size_t n) {
  const Physical phys = leaf_->physical;
  switch (encoding) {
    case Encoding::plain: return decode_plain(p, size, n, false);
    case Encoding::plain_dictionary:
    case Encoding::rle_dictionary: return decode_indices(p, size, n);
    case Encoding::rle: {
      if (phys != Physical::boolean) break;
      if (size < 4 || le32(p) > size - 4) throw Error("RLE booleans run past the page");
      RleDecoder decoder(p + 4, le32(p), 1);
      indices_.resize(n);
      if (decoder.get(indices_.data(), n) != n) throw Error("fewer RLE booleans than the page's values");
      phys_.resize(n);
      for (std::size_t i = 0; i < n; ++i) phys_[i] = static_cast<std::byte>(indices_[i]);
      return append_fixed(phys_.data(), n);
    }
    case Encoding::delta_binary_packed: {
      if (phys != Physical::int32 && phys != Physical::int64) break;
      decode_delta_binary(p, size, static_cast<std::int64_t>(n), delta_);
      phys_.resize(n * phys_width_);
      if (phys == Physical::int64) {
        std::memcpy(phys_.data(), delta_.data(), n * 8);
      } else {
        for (std::size_t i = 0; i < n; ++i) {
          const auto v = static_cast<std::int32_t>(static_cast<std::uint32_t>(delta_[i]));
          std::memcpy(phys_.data() + i * 4, &v, 4);
        }
      }
      return append_fixed(phys_.data(), n);
    }
    case Encoding::delta_length_byte_array:
    case Encoding::delta_byte_array: {
      if (phys != Physical::byte_array && !(phys == Physical::fixed && encoding == Encoding::delta_byte_array)) break;
      bytes_scratch_.clear();
      ends_scratch_.clear();
      if (encoding == Encoding::delta_length_byte_array)
        decode_delta_length(p, size, n, {&bytes_scratch_, &ends_scratch_}, delta_);
      else
        decode_delta_byte_array(p, size, n, {&bytes_scratch_, &ends_scratch_}, delta_, delta2_);
      std::uint64_t at = 0;
      for (std::size_t i = 0; i < n; ++i) {
        const std::uint64_t len = ends_scratch_[i] - at;
        if (phys == Physical::fixed && len != phys_width_)
          throw Error("DELTA_BYTE_ARRAY: a value of " + std::to_string(len) + " bytes in a FIXED_LEN_BYTE_ARRAY(" +
                      std::to_string(phys_width_) + ") column");
        if (phys == Physical::fixed && type_.dtype == DType::f16) append_fixed(bytes_scratch_.data() + at, 1);
        else append_bytes(bytes_scratch_.data() + at, len);
        at = ends_scratch_[i];
      }
      return;
    }
    case Encoding::byte_stream_split: {
      if (phys == Physical::boolean || phys == Physical::byte_array || phys == Physical::int96) break;
      const std::size_t w = phys_width_;
      if (n > 0 && size / n < w) throw Error("BYTE_STREAM_SPLIT values run past the page");
      phys_.resize(n * w);
      for (std::size_t k = 0; k < w; ++k) {
        const std::byte* stream = p + k * n;
        for (std::size_t i = 0; i < n; ++i) phys_[i * w + k] = stream[i];
      }
      if (phys == Physical::fixed && type_.dtype != DType::f16) {
        for (std::size_t i = 0; i < n; ++i) append_bytes(phys_.data() + i * w, w);
        return;
      }
      return append_fixed(phys_.data(), n);
    }
    default: break;
  }
  throw Error(std::string("the encoding ") + encoding_name(static_cast<int>(encoding)) + " on " + physical_name(phys) +
              " is not supported");
}

void ChunkDecoder::decode_plain(const std::byte* p, std::size_t size, std::size_t n, bool dictionary) {
  if (dictionary) {
    // Dictionary values are decoded and converted once, as output values
    // are, into the dictionary's buffers (swapped back on the way out).
    out_->data.swap(dict_data_);
    std::swap(value_begins_, dict_begins_);
    std::swap(value_ends_, dict_ends_);
  }
  struct Restore {
    ChunkDecoder* self;
    bool on;
    ~Restore() {
      if (!on) return;
      self->out_->data.swap(self->dict_data_);
      std::swap(self->value_begins_, self->dict_begins_);
      std::swap(self->value_ends_, self->dict_ends_);
    }
  } restore{this, dictionary};
  const Physical phys = leaf_->physical;
  if (phys == Physical::boolean) {
    if ((n + 7) / 8 > size) throw Error("PLAIN booleans run past the page");
    phys_.resize(n);
    for (std::size_t i = 0; i < n; ++i) phys_[i] = static_cast<std::byte>((static_cast<unsigned>(p[i >> 3]) >> (i & 7)) & 1);
    return append_fixed(phys_.data(), n);
  }
  if (phys == Physical::byte_array && in_place_ && !dictionary) {
    // The page is in out data already: the values stay where they are.
    const auto base = static_cast<std::uint64_t>(p - out_->data.data());
    std::uint64_t at = 0;
    for (std::size_t i = 0; i < n; ++i) {
      if (size - at < 4) throw Error("PLAIN byte arrays run past the page");
      const std::uint32_t len = le32(p + at);
      at += 4;
      if (len > size - at) throw Error("a PLAIN byte array runs past the page");
      value_begins_.push_back(base + at);
      value_ends_.push_back(base + at + len);
      at += len;
    }
    return;
  }
  if (phys == Physical::byte_array) {
    const std::byte* end = p + size;
    for (std::size_t i = 0; i < n; ++i) {
      if (end - p < 4) throw Error("PLAIN byte arrays run past the page");
      const std::uint32_t len = le32(p);
      p += 4;
      if (len > static_cast<std::uint64_t>(end - p)) throw Error("a PLAIN byte array runs past the page");
      append_bytes(p, len);
      p += len;
    }
    return;
  }
  const std::size_t w = phys_width_;
  if (n > 0 && size / n < w) throw Error(std::string("PLAIN ") + physical_name(phys) + " values run past the page");
  if (phys == Physical::fixed && type_.dtype != DType::f16) {
    for (std::size_t i = 0; i < n; ++i) append_bytes(p + i * w, w);
    return;
  }
  append_fixed(p, n);
}

void ChunkDecoder::decode_indices(const std::byte* p, std::size_t size, std::size_t n) {
  if (!has_dictionary_) throw Error("dictionary-encoded values without a dictionary page");
  if (n == 0) return;
  if (size < 1) throw Error("dictionary indices run past the page");
  const int bits = static_cast<int>(p[0]);
  if (bits > 32) throw Error("dictionary index bit width " + std::to_string(bits) + " is over 32");
  RleDecoder decoder(p + 1, size - 1, bits);
  indices_.resize(n);
  if (decoder.get(indices_.data(), n) != n) throw Error("fewer dictionary indices than the page's values");
  for (std::size_t i = 0; i < n; ++i)
    if (indices_[i] >= dict_count_)
      throw Error("dictionary index " + std::to_string(indices_[i]) + " past the dictionary's " +
                  std::to_string(dict_count_) + " values");
  if (type_.dtype) {
    const std::size_t w = type_.width;
    std::byte* dst = out_->data.extend(n * w);
    const std::byte* dict = dict_data_.data();
    if (w == 4) {
      for (std::size_t i = 0; i < n; ++i) std::memcpy(dst + i * 4, dict + indices_[i] * 4, 4);
    } else if (w == 8) {
      for (std::size_t i = 0; i < n; ++i) std::memcpy(dst + i * 8, dict + indices_[i] * 8, 8);
    } else {
      for (std::size_t i = 0; i < n; ++i) std::memcpy(dst + i * w, dict + indices_[i] * w, w);
    }
    return;
  }
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t k = indices_[i];
    append_bytes(dict_data_.data() + dict_begins_[k], dict_ends_[k] - dict_begins_[k]);
  }
}

void ChunkDecoder::append_fixed(const std::byte* phys, std::size_t n) {
  if (n == 0) return;  // an empty page's values may be nowhere
  std::byte* dst = out_->data.extend(n * type_.width);
  const Physical p = leaf_->physical;
  const std::size_t w = type_.width;
  if (p == Physical::int96) {
    // Nanoseconds of the day, then the Julian day: as microseconds since
    // the epoch, Spark's resolution. The arithmetic wraps as Spark's does
    // when it writes dates past what int64 nanoseconds hold, so those read
    // back as the microseconds Spark meant.
    for (std::size_t i = 0; i < n; ++i) {
      std::int64_t nanos;
      std::int32_t julian;
      std::memcpy(&nanos, phys + i * 12, 8);
      std::memcpy(&julian, phys + i * 12 + 8, 4);
      const std::int64_t floor_us = nanos / 1000 - (nanos % 1000 < 0 ? 1 : 0);
      const auto us = static_cast<std::int64_t>(
          static_cast<std::uint64_t>(static_cast<std::int64_t>(julian) - 2440588) * 86400000000ull +
          static_cast<std::uint64_t>(floor_us));
      std::memcpy(dst + i * 8, &us, 8);
    }
  } else if (type_.dtype == DType::f64 && leaf_->logical == Logical::decimal) {
    for (std::size_t i = 0; i < n; ++i) {
      double v;
      if (p == Physical::int32) {
        std::int32_t x;
        std::memcpy(&x, phys + i * 4, 4);
        v = decimal_to_double(x, leaf_->scale);
      } else {
        std::int64_t x;
        std::memcpy(&x, phys + i * 8, 8);
        v = decimal_to_double(x, leaf_->scale);
      }
      std::memcpy(dst + i * 8, &v, 8);
    }
  } else if (w == phys_width_) {
    std::memcpy(dst, phys, n * w);
  } else {  // int32 narrowed to 8 or 16 bits (little-endian: the low bytes)
    for (std::size_t i = 0; i < n; ++i) std::memcpy(dst + i * w, phys + i * phys_width_, w);
  }
}

void ChunkDecoder::append_bytes(const std::byte* p, std::size_t len) {
  ByteBuffer& data = out_->data;
  if (type_.dtype) {  // a decimal in bytes
    const double v = decimal_value(p, len, leaf_->scale);
    std::memcpy(data.extend(8), &v, 8);
    return;
  }
  value_begins_.push_back(data.size());
  data.append(p, len);
  value_ends_.push_back(data.size());
}

}  // namespace sluice::io::parquet
