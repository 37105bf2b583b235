#include "parquet_test_support.h"

#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>

#include "sluice/error.h"

namespace sluice::test {

std::string corpus(const std::string& name) { return std::string(SLUICE_IO_TEST_DATA) + "/parquet-testing/" + name; }

std::string render(const io::ParquetValue& v, const io::ParquetColumnInfo& info) {
  if (!info.dtype) return std::string(reinterpret_cast<const char*>(v.data), v.bytes);
  const std::size_t w = dtype_size(*info.dtype);
  std::string out;
  for (std::size_t k = 0; k < v.bytes / w; ++k) {
    const std::byte* p = v.data + k * w;
    if (k > 0) out += ";";
    auto get = [&](auto x) {
      std::memcpy(&x, p, sizeof(x));
      return x;
    };
    std::ostringstream s;
    s.precision(17);
    switch (*info.dtype) {
      case DType::u8: s << +get(std::uint8_t{}); break;
      case DType::i8: s << +get(std::int8_t{}); break;
      case DType::u16: case DType::f16: case DType::bf16: s << get(std::uint16_t{}); break;
      case DType::i16: s << get(std::int16_t{}); break;
      case DType::u32: s << get(std::uint32_t{}); break;
      case DType::i32: s << get(std::int32_t{}); break;
      case DType::u64: s << get(std::uint64_t{}); break;
      case DType::i64: s << get(std::int64_t{}); break;
      case DType::f32: s << get(float{}); break;
      case DType::f64: s << get(double{}); break;
      case DType::boolean: s << (get(std::uint8_t{}) ? "true" : "false"); break;
    }
    out += s.str();
  }
  return out;
}

Table read_table(const std::string& path, std::vector<std::string> columns) {
  auto file = std::make_shared<io::ParquetFile>(path);
  if (columns.empty())
    for (const io::ParquetColumnInfo& c : file->columns())
      if (c.unsupported.empty()) columns.push_back(c.name);
  io::ParquetReader reader({file}, columns);
  Table t;
  t.names = columns;
  std::vector<io::ParquetValue> values(columns.size());
  for (std::uint64_t r = 0; r < reader.rows(); ++r) {
    reader.read(r, values);
    std::vector<std::string>& row = t.rows.emplace_back();
    for (std::size_t c = 0; c < columns.size(); ++c) row.push_back(render(values[c], reader.column_infos()[c]));
  }
  return t;
}

std::vector<std::vector<std::string>> read_csv(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot open " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> row;
  std::string cell;
  bool quoted = false, any = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    if (quoted) {
      if (ch == '"' && i + 1 < text.size() && text[i + 1] == '"') cell += '"', ++i;
      else if (ch == '"') quoted = false;
      else cell += ch;
    } else if (ch == '"') {
      quoted = true;
      any = true;
    } else if (ch == ',') {
      row.push_back(cell), cell.clear();
    } else if (ch == '\n') {
      row.push_back(cell), cell.clear();
      rows.push_back(row), row.clear();
      any = false;
    } else if (ch != '\r') {
      cell += ch;
      any = true;
    }
  }
  if (any || !row.empty()) row.push_back(cell), rows.push_back(row);
  return rows;
}

}  // namespace sluice::test
