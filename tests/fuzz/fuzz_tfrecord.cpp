// Fuzzes TFRecord framing: indexing (without writing a sidecar), reading every
// record with both CRC checks, and streaming.
#include <cstdint>

#include "memfd_file.h"
#include "read_all.h"
#include "sluice/io/tfrecord.h"
#include "sluice/io/tfrecord_stream.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  MemfdFile file(data, size);
  sluice::io::TFRecordOptions options;
  options.write_index = false;
  read_all<sluice::io::TFRecordSource, sluice::io::TFRecordOptions, sluice::io::TFRecordStream>(file.path(),
                                                                                               options);
  return 0;
}
