// Parquet tests' helpers: whole tables read through ParquetReader, values
// rendered as text for comparing with the corpus's documented values.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sluice/io/parquet.h"

namespace sluice::test {

// Every readable column of `path` (or `columns`), row by row: each value as
// text ("" for a null, "1;2;3" for a list, raw bytes for strings).
struct Table {
  std::vector<std::string> names;
  std::vector<std::vector<std::string>> rows;
};
Table read_table(const std::string& path, std::vector<std::string> columns = {});

// A value of dtype `t` (or bytes) as text.
std::string render(const io::ParquetValue& v, const io::ParquetColumnInfo& info);

// A CSV file (RFC 4180 quoting), rows of cells; an unquoted empty cell is "".
std::vector<std::vector<std::string>> read_csv(const std::string& path);

std::string corpus(const std::string& name);  // tests/io/data/parquet-testing/NAME

}  // namespace sluice::test
