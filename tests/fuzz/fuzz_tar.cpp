// Fuzzes tar parsing (ustar, pax, GNU long names, WebDataset grouping).
#include <cstdint>

#include "memfd_file.h"
#include "read_all.h"
#include "sluice/io/tar.h"
#include "sluice/io/tar_stream.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  MemfdFile file(data, size);
  read_all<sluice::io::TarSource, sluice::io::TarOptions, sluice::io::TarStream>(file.path(), {});
  return 0;
}
