#include "sluice/io/npy.h"

#include <cstring>
#include <utility>

#include "file_util.h"
#include "sluice/error.h"

namespace sluice::io {
namespace {

// The value of 'key' in the header dict, as written by numpy: a quoted
// string, True/False, or a parenthesised tuple. Empty when absent.
std::string dict_value(const std::string& header, const std::string& key) {
  for (char q : {'\'', '"'}) {
    const std::string needle = std::string(1, q) + key + std::string(1, q);
    std::size_t at = header.find(needle);
    if (at == std::string::npos) continue;
    std::size_t colon = header.find(':', at + needle.size());
    if (colon == std::string::npos) return {};
    std::size_t v = header.find_first_not_of(" ", colon + 1);
    if (v == std::string::npos) return {};
    if (header[v] == '\'' || header[v] == '"') {
      std::size_t end = header.find(header[v], v + 1);
      return end == std::string::npos ? std::string() : header.substr(v, end - v + 1);
    }
    if (header[v] == '(') {
      std::size_t end = header.find(')', v);
      return end == std::string::npos ? std::string() : header.substr(v, end - v + 1);
    }
    if (header[v] == '[') return "[";  // a structured dtype
    std::size_t end = header.find_first_of(",}", v);
    std::string s = header.substr(v, end - v);
    while (!s.empty() && s.back() == ' ') s.pop_back();
    return s;
  }
  return {};
}

}  // namespace

NpyArray::NpyArray(std::string path) : path_(std::move(path)) {
  detail::Fd fd = detail::open_read(path_);
  map_bytes_ = detail::file_size(fd.get(), path_);
  if (map_bytes_ < 10)
    throw Error(where() + ": not a .npy file: " + std::to_string(map_bytes_) + " bytes, too short for the header");
  storage_ = detail::map_read_only(fd.get(), map_bytes_, path_);
  map_ = storage_.get();
  if (looks_like_zip({map_, map_bytes_}))
    throw Error(where() + ": a .npz archive, not a .npy file; name one of its members (" +
                NpzArchive(path_).member_list() + ")");
  parse_header();
}

NpyArray::NpyArray(std::string path, std::string_view member)
    : NpyArray(NpzArchive(std::move(path)).array(member)) {}

NpyArray::NpyArray(std::string path, std::string member, std::shared_ptr<const std::byte> storage,
                   std::size_t bytes)
    : path_(std::move(path)), member_(std::move(member)), storage_(std::move(storage)) {
  map_ = storage_.get();
  map_bytes_ = bytes;
  if (map_bytes_ < 10)
    throw Error(where() + ": not a .npy stream: " + std::to_string(map_bytes_) +
                " bytes, too short for the header");
  parse_header();
}

std::string NpyArray::where() const {
  return member_.empty() ? path_ : path_ + ": member '" + member_ + "'";
}

void NpyArray::parse_header() {
  auto bad = [&](std::uint64_t offset, const std::string& why) {
    throw Error(detail::at_offset(where(), offset, "bad .npy header: " + why));
  };
  if (std::memcmp(map_, "\x93NUMPY", 6) != 0) bad(0, "no \\x93NUMPY magic");
  const auto major = static_cast<unsigned>(map_[6]);
  std::size_t header_len = 0, header_at = 0;
  if (major == 1) {
    header_len = static_cast<std::size_t>(map_[8]) | static_cast<std::size_t>(map_[9]) << 8;
    header_at = 10;
  } else if (major == 2 || major == 3) {
    if (map_bytes_ < 12) bad(8, "file ends inside the header length");
    header_len = 0;
    for (int i = 3; i >= 0; --i) header_len = header_len << 8 | static_cast<std::size_t>(map_[8 + i]);
    header_at = 12;
  } else {
    bad(6, "unsupported format version " + std::to_string(major));
  }
  if (header_at + header_len > map_bytes_)
    bad(8, "header length " + std::to_string(header_len) + " runs past the end of the file (" +
               std::to_string(map_bytes_) + " bytes)");
  const std::string header(reinterpret_cast<const char*>(map_ + header_at), header_len);
  data_offset_ = header_at + header_len;

  std::string descr = dict_value(header, "descr");
  if (descr == "[") bad(header_at, "structured dtypes are not supported");
  if (descr.size() < 4) bad(header_at, "no 'descr'");
  descr = descr.substr(1, descr.size() - 2);
  const char order = descr[0];
  const std::string code = descr.substr(1);
  if (code.rfind("O", 0) == 0)
    bad(header_at, "object arrays (dtype 'O') hold Python objects, not data; save a numeric array");
  if (order == '>' && code != "b1" && code != "i1" && code != "u1")
    bad(header_at, "big-endian data ('" + descr + "') is not supported");
  struct Code { const char* code; DType type; };
  static constexpr Code kCodes[] = {
      {"b1", DType::boolean}, {"i1", DType::i8},  {"u1", DType::u8},  {"i2", DType::i16},
      {"u2", DType::u16},     {"i4", DType::i32}, {"u4", DType::u32}, {"i8", DType::i64},
      {"u8", DType::u64},     {"f2", DType::f16}, {"f4", DType::f32}, {"f8", DType::f64},
  };
  bool known = false;
  for (const Code& c : kCodes)
    if (code == c.code) {
      dtype_ = c.type;
      known = true;
    }
  if (!known) bad(header_at, "unsupported dtype '" + descr + "'");
  item_bytes_ = dtype_size(dtype_);

  const std::string order_value = dict_value(header, "fortran_order");
  if (order_value == "True") fortran_ = true;
  else if (order_value == "False") fortran_ = false;
  else bad(header_at, "no 'fortran_order'");

  const std::string shape = dict_value(header, "shape");
  if (shape.empty() || shape.front() != '(') bad(header_at, "no 'shape'");
  shape_.clear();
  std::int64_t v = -1;
  for (char c : shape.substr(1)) {
    if (c >= '0' && c <= '9') {
      v = (v < 0 ? 0 : v) * 10 + (c - '0');
      if (v > (std::int64_t{1} << 48)) bad(header_at, "dimension too large in 'shape'");
    } else if (c == ',' || c == ')') {
      if (v >= 0) shape_.push_back(v);
      v = -1;
    } else if (c != ' ' && c != 'L') {
      bad(header_at, "unreadable 'shape' " + shape);
    }
  }
  std::uint64_t elements = 1;
  for (std::int64_t d : shape_) elements *= static_cast<std::uint64_t>(d);
  const std::uint64_t need = elements * item_bytes_;
  if (map_bytes_ - data_offset_ < need)
    throw Error(detail::at_offset(where(), data_offset_,
                                  "truncated .npy: the shape needs " + std::to_string(need) +
                                      " data bytes, the file has " +
                                      std::to_string(map_bytes_ - data_offset_)));
  rows_ = shape_.empty() ? 1 : static_cast<std::uint64_t>(shape_[0]);
  row_bytes_ = item_bytes_;
  for (std::size_t k = 1; k < shape_.size(); ++k) row_bytes_ *= static_cast<std::size_t>(shape_[k]);
}

std::vector<std::int64_t> NpyArray::row_shape() const {
  if (shape_.empty()) return {};
  return std::vector<std::int64_t>(shape_.begin() + 1, shape_.end());
}

std::span<const std::byte> NpyArray::data() const {
  return {map_ + data_offset_, static_cast<std::size_t>(rows_) * row_bytes_};
}

std::span<const std::byte> NpyArray::row(std::uint64_t i) const {
  if (i >= rows_)
    throw Error(where() + ": row " + std::to_string(i) + " out of range (" + std::to_string(rows_) + " rows)");
  if (!rows_contiguous())
    throw Error(where() + ": rows of a Fortran-order array are not contiguous; use copy_row()");
  return {map_ + data_offset_ + i * row_bytes_, row_bytes_};
}

void NpyArray::copy_row(std::uint64_t i, std::span<std::byte> out) const {
  if (out.size() != row_bytes_)
    throw Error(where() + ": copy_row needs " + std::to_string(row_bytes_) + " bytes, got " +
                std::to_string(out.size()));
  if (rows_contiguous()) {
    std::span<const std::byte> r = row(i);
    std::memcpy(out.data(), r.data(), r.size());
    return;
  }
  if (i >= rows_)
    throw Error(where() + ": row " + std::to_string(i) + " out of range (" + std::to_string(rows_) + " rows)");
  // Fortran order: element (i, j1..jn) lies at i + d0*(j1 + d1*(j2 + ...)).
  // Walk the row's elements in C order, carrying the Fortran offset along.
  const std::size_t n = shape_.size();
  std::vector<std::uint64_t> stride(n);  // Fortran strides in elements
  stride[0] = 1;
  for (std::size_t k = 1; k < n; ++k) stride[k] = stride[k - 1] * static_cast<std::uint64_t>(shape_[k - 1]);
  std::vector<std::int64_t> idx(n, 0);
  const std::byte* base = map_ + data_offset_;
  const std::size_t count = row_bytes_ / item_bytes_;
  std::uint64_t src = i;
  for (std::size_t e = 0; e < count; ++e) {
    std::memcpy(out.data() + e * item_bytes_, base + src * item_bytes_, item_bytes_);
    for (std::size_t k = n; k-- > 1;) {  // odometer over dims 1..n-1, last fastest
      ++idx[k];
      src += stride[k];
      if (idx[k] < shape_[k]) break;
      src -= stride[k] * static_cast<std::uint64_t>(shape_[k]);
      idx[k] = 0;
    }
  }
}

}  // namespace sluice::io
