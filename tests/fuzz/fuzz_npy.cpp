// Fuzzes .npy headers: any file either maps as an array whose rows can all be
// read within the mapping, or throws sluice::Error naming the file.
#include <cstdint>
#include <vector>

#include "memfd_file.h"
#include "sluice/error.h"
#include "sluice/io/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  MemfdFile file(data, size);
  try {
    sluice::io::NpyArray array(file.path());
    std::vector<std::byte> row(array.row_bytes());
    for (std::uint64_t i = 0; i < array.rows() && i < 64; ++i) {
      array.copy_row(i, row);
      if (array.rows_contiguous()) array.row(i);
    }
  } catch (const sluice::Error&) {
  }
  return 0;
}
