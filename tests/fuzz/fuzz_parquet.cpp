// Fuzzes Parquet's footer (Thrift compact protocol, schema, row groups) and
// page decoders (headers, codecs, levels, every encoding): any file either
// opens and its rows read (one by one and in runs), or throws sluice::Error naming the file. Decoded
// chunks are capped at 64 MiB here, so a corrupt size cannot pass for a
// large allocation.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "memfd_file.h"
#include "sluice/error.h"
#include "sluice/io/parquet.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  MemfdFile file(data, size);
  try {
    auto parquet = std::make_shared<const sluice::io::ParquetFile>(file.path());
    (void)parquet->describe();
    std::vector<std::string> columns;
    for (const sluice::io::ParquetColumnInfo& c : parquet->columns())
      if (c.unsupported.empty()) columns.push_back(c.name);
    if (columns.empty()) return 0;
    sluice::io::ParquetReaderOptions options;
    options.max_chunk_bytes = 64u << 20;
    sluice::io::ParquetReader reader({parquet}, columns, options);
    std::vector<sluice::io::ParquetValue> values(columns.size());
    // Every row group's first and last rows, and the first rows.
    std::uint64_t at = 0;
    for (const sluice::io::ParquetRowGroupInfo& g : parquet->row_groups()) {
      if (g.rows > 0) {
        try {
          reader.read(at, values);
          reader.read(at + g.rows - 1, values);
        } catch (const sluice::Error&) {
        }
      }
      at += g.rows;
    }
    for (std::uint64_t r = 0; r < std::min<std::uint64_t>(reader.rows(), 64); ++r) reader.read(r, values);
    // And runs of them, copied column by column into slots.
    std::vector<sluice::io::ParquetColumnRun> runs(columns.size());
    std::vector<std::byte> slots;
    for (std::uint64_t r = 0; r < std::min<std::uint64_t>(reader.rows(), 64);) {
      const std::uint64_t n = reader.read_run(r, 16, runs);
      std::size_t slot = 0;
      for (const sluice::io::ParquetColumnRun& run : runs) slot += run.width;
      slots.resize(n * slot);
      std::size_t offset = 0;
      for (const sluice::io::ParquetColumnRun& run : runs) {
        sluice::io::copy_run(run, n, slots.data() + offset, slot);
        offset += run.width;
      }
      r += n;
    }
  } catch (const sluice::Error&) {
  }
  return 0;
}
