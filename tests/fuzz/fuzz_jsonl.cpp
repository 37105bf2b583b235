// Fuzzes JSON lines: indexing (no sidecar written) and parsing every line into
// fields, with a nested field selected. A compressed input cannot write its
// decompressed copy (index_dir cannot exist), so it must fail cleanly.
#include <cstdint>
#include <vector>

#include "memfd_file.h"
#include "sluice/error.h"
#include "sluice/io/jsonl.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  MemfdFile file(data, size);
  sluice::io::JsonlOptions options;
  options.write_index = false;
  options.index_dir = "/dev/null/none";
  options.field = size % 2 ? "text" : "a.b";
  try {
    sluice::io::JsonlSource source({file.path()}, options);
    std::vector<std::byte> buffer;
    sluice::io::Sample sample;
    for (std::uint64_t id = 0; id < source.size(); ++id) {
      try {
        sluice::io::read_sample(source, id, buffer, sample);
        for (const sluice::io::Field& f : sample.fields) {
          volatile std::size_t touch = f.name.size() + f.bytes.size();
          (void)touch;
          if (!f.bytes.empty()) (void)*(volatile const std::byte*)&f.bytes.back();
        }
      } catch (const sluice::Error&) {
      }
    }
  } catch (const sluice::Error&) {
  }
  return 0;
}
