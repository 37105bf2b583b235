// Fuzzes tar parsing (ustar, pax, GNU long names, WebDataset grouping), and
// the tar index sidecar (tar_index.h): an input read as an index either is an
// error or gives members inside the shard size it states; one whose size is
// the input's own then drives a TarSource over the input.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "memfd_file.h"
#include "read_all.h"
#include "sluice/io/tar.h"
#include "sluice/io/tar_index.h"
#include "sluice/io/tar_stream.h"

namespace {

void read_as_index(std::string_view text, const std::string& path) {
  using namespace sluice::io;
  TarIndex index;
  try {
    index = parse_tar_index(text, "fuzz.idx");
  } catch (const sluice::Error&) {
    return;
  }
  for (const TarIndexSample& s : index.samples) {
    if (s.members.empty()) std::abort();
    for (const TarIndexMember& m : s.members)
      if (m.offset > index.shard_bytes || m.size > index.shard_bytes - m.offset) std::abort();
  }
  if (index.shard_bytes != text.size()) return;  // a remote shard of another size is refused by its fetch
  try {
    const TarSource source({path}, {std::move(index)}, {});
    Sample sample;
    std::vector<std::byte> buffer;
    for (std::uint64_t i = 0; i < source.size() && i < 64; ++i) read_sample(source, i, buffer, sample);
  } catch (const sluice::Error&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  MemfdFile file(data, size);
  read_all<sluice::io::TarSource, sluice::io::TarOptions, sluice::io::TarStream>(file.path(), {});
  read_as_index(std::string_view(reinterpret_cast<const char*>(data), size), file.path());
  return 0;
}
