// read_all.h: what the record-format fuzz targets do with a shard: index it
// and read every sample, then stream it, under both error policies. Any input
// either reads or throws sluice::Error; anything else is a finding.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sluice/error.h"
#include "sluice/io/record_source.h"
#include "sluice/io/record_stream.h"
#include "sluice/options.h"
#include "sluice/io/sample.h"

template <typename Source, typename SourceOptions, typename Stream>
void read_all(const std::string& path, SourceOptions source_options) {
  using namespace sluice;
  for (OnError policy : {OnError::fail, OnError::skip}) {
    try {
      source_options.on_error = policy;
      Source source({path}, source_options);
      io::Sample sample;
      std::vector<std::byte> buffer;
      for (std::uint64_t i = 0; i < source.size() && i < 64; ++i) io::read_sample(source, i, buffer, sample);
    } catch (const Error&) {
    }
    try {
      io::StreamOptions stream_options;
      stream_options.on_error = policy;
      Stream stream({path}, stream_options);
      stream.reset(0);
      io::Sample sample;
      for (int i = 0; i < 64 && stream.next(sample); ++i) {
      }
    } catch (const Error&) {
    }
  }
}
