// Fuzzes tar parsing (ustar, pax, GNU long names, WebDataset grouping):
// indexing a shard under both policies, reading every sample, and streaming
// it. Any input either reads or throws sluice::Error naming the file.
#include <cstdint>
#include <vector>

#include "memfd_file.h"
#include "sluice/error.h"
#include "sluice/io/sample.h"
#include "sluice/io/tar.h"
#include "sluice/io/tar_stream.h"

using namespace sluice;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  MemfdFile file(data, size);
  for (OnError policy : {OnError::fail, OnError::skip}) {
    try {
      io::TarOptions options;
      options.on_error = policy;
      io::TarSource source({file.path()}, options);
      io::Sample sample;
      std::vector<std::byte> buffer;
      for (std::uint64_t i = 0; i < source.size() && i < 64; ++i) io::read_sample(source, i, buffer, sample);
    } catch (const Error&) {
    }
    try {
      io::StreamOptions options;
      options.on_error = policy;
      io::TarStream stream({file.path()}, options);
      stream.reset(0);
      io::Sample sample;
      for (int i = 0; i < 64 && stream.next(sample); ++i) {
      }
    } catch (const Error&) {
    }
  }
  return 0;
}
