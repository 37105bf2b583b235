// Fuzzes .npy headers and .npz archives: any file either maps as an array
// (or an archive of arrays) whose rows can all be read within the mapping or
// inflated member, or throws sluice::Error naming the file.
#include <cstdint>
#include <vector>

#include "memfd_file.h"
#include "sluice/error.h"
#include "sluice/io/npy.h"

namespace {

void read_rows(const sluice::io::NpyArray& array) {
  std::vector<std::byte> row(array.row_bytes());
  for (std::uint64_t i = 0; i < array.rows() && i < 64; ++i) {
    array.copy_row(i, row);
    if (array.rows_contiguous()) array.row(i);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  MemfdFile file(data, size);
  try {
    if (sluice::io::looks_like_zip({reinterpret_cast<const std::byte*>(data), size})) {
      sluice::io::NpzArchive npz(file.path());
      for (const sluice::io::NpzMember& m : npz.members()) {
        try {
          read_rows(npz.array(m.name));
        } catch (const sluice::Error&) {
        }
      }
    } else {
      read_rows(sluice::io::NpyArray(file.path()));
    }
  } catch (const sluice::Error&) {
  }
  return 0;
}
