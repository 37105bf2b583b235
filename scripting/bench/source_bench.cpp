// sluice_source_bench: a TFRecord pipeline end to end (pipeline.lua with
// sluice.tfrecord, map touching each record, real workers, batches delivered
// to this process) against a plain sequential read(2) of the same file, page
// cache warm. Prints medians and their ratio, for 4 KiB and 1 MiB records,
// indexed (AsyncReader read-ahead) and streaming. The read-ahead window is
// 64 records of 4 KiB and 8 of 1 MiB: each window slot's buffer is touched
// (page-faulted) once per worker, which a short run would otherwise measure.
//
// usage: sluice_source_bench [--dir DIR] [--runs N] [--mib N] [--workers N]
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "sluice/io/tfrecord_writer.h"
#include "sluice/loader.h"
#include "sluice/script.h"

namespace fs = std::filesystem;

namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Seconds to read the whole file with read(2) through a 1 MiB buffer.
double plain_read(const std::string& path) {
  std::vector<char> buffer(1 << 20);
  const double start = now();
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  while (::read(fd, buffer.data(), buffer.size()) > 0) {
  }
  ::close(fd);
  return now() - start;
}

// Records per second over one epoch of the pipeline, from the first batch
// delivered (start-up excluded) to the last.
double pipeline_rate(const std::string& script, std::uint32_t workers) {
  sluice::Script s = sluice::load_script({.path = script, .workers = workers});
  sluice::Loader loader(s.options);
  loader.next();
  const double start = now();
  std::uint64_t records = 0;
  while (auto batch = loader.next()) records += batch->size();
  return static_cast<double>(records) / (now() - start);
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir = fs::temp_directory_path() / "sluice-source-bench";
  int runs = 5;
  std::size_t mib = 256;
  std::uint32_t workers = 2;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--dir") dir = argv[i + 1];
    else if (a == "--runs") runs = std::stoi(argv[i + 1]);
    else if (a == "--mib") mib = std::stoul(argv[i + 1]);
    else if (a == "--workers") workers = static_cast<std::uint32_t>(std::stoul(argv[i + 1]));
    else {
      std::fprintf(stderr, "usage: sluice_source_bench [--dir DIR] [--runs N] [--mib N] [--workers N]\n");
      return 2;
    }
  }
  fs::create_directories(dir);
  std::printf("TFRecord pipeline (sluice.tfrecord + map, %u workers) vs plain read(2), page cache warm, "
              "median of %d\n", workers, runs);
  for (const std::size_t record_bytes : {std::size_t{4096}, std::size_t{1} << 20}) {
    const std::string shard = dir + "/bench-" + std::to_string(record_bytes) + ".tfrecord";
    const std::uint64_t records = (mib << 20) / record_bytes;
    {
      sluice::io::TFRecordWriter writer(shard);
      std::vector<std::byte> record(record_bytes, std::byte{1});
      for (std::uint64_t r = 0; r < records; ++r) writer.write(record);
      writer.close();
    }
    const std::uint32_t batch = record_bytes >= (1u << 20) ? 8 : 256;
    const std::uint32_t read_ahead = record_bytes >= (1u << 20) ? 8 : 64;
    for (const bool index : {true, false}) {
      const std::string script = dir + "/bench.lua";
      std::ofstream(script) << "local sluice = require('sluice')\n"
                               "return sluice.pipeline {\n"
                               "  source = sluice.tfrecord { '" << shard << "', index = " << (index ? "true" : "false")
                            << ", size = " << records << " },\n"
                               "  fields = { { 'last', 'uint8' } },\n"
                               "  map = function(s, ctx) return { last = s.bytes.data[s.bytes.nbytes - 1] } end,\n"
                               "  batch_size = " << batch << ", shuffle = " << (index ? "true" : "false")
                            << ", read_ahead = " << read_ahead << ",\n}\n";
      std::vector<double> plain, piped;  // records per second
      plain_read(shard);  // warm the cache
      for (int r = 0; r < runs; ++r) {
        plain.push_back(static_cast<double>(records) / plain_read(shard));
        piped.push_back(pipeline_rate(script, workers));
      }
      const double p = median(plain), s = median(piped);
      const double mb = static_cast<double>(record_bytes) / 1e6;
      std::printf("  %7zu-byte records, %-9s plain %7.0f MB/s   pipeline %7.0f MB/s (%8.0f records/s)   ratio %.2f\n",
                  record_bytes, index ? "indexed" : "streaming", p * mb, s * mb, s, s / p);
    }
    fs::remove(shard);
    fs::remove(shard + ".idx");
  }
  return 0;
}
