// sluice_io_bench: the I/O benchmark of runtime/io, as ratios against plain
// reads measured in the same run (median of several runs each).
//
//   1. Streaming TFRecord, 4 KiB and 1 MiB records (4 shards, 256 MiB per
//      case). Sluice: one TFRecordStream, reset() per run as a worker does per
//      epoch, framing and both CRC32Cs checked, every record handed out.
//      Baseline: open each shard, posix_fadvise(SEQUENTIAL), read(2) into one
//      reusable 256 KiB buffer until EOF, close. Target: ratio >= 0.8.
//   2. The same shards through a Loader (the pipeline a user runs): one worker
//      process per CPU, each streaming its partition of the shards with a
//      TFRecordStream (both CRC32Cs checked) and copying every record into its
//      batch's slot in shared memory; the consumer takes the batches. Same
//      baseline, same target.
//   3. Random access over 100k small files (1-5 KiB, 100 directories), in the
//      same shuffled order on both sides. Sluice: AsyncReader over a
//      FileSource (libuv loop, read-ahead window, whole-file pool jobs of
//      --per-job files, pool of --threads threads). Baseline: one thread,
//      open/fstat/read/close per file into one reusable buffer. Target: >= 2.
// Each case runs with the page cache warm, then cold where the kernel lets
// posix_fadvise(DONTNEED) drop the files' pages (before each timed pass).
//
// The small files are made once in FILES_DIR (default: TMPDIR/sluice-io-bench-
// files-N) and reused by later runs; the TFRecord shards live in a temporary
// directory (or --dir) for the run.
//
// usage: sluice_io_bench [--dir DIR] [--files-dir DIR] [--runs N] [--files N] [--mib N]
//                        [--window N] [--threads N] [--per-job N]
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <numeric>
#include <random>
#include <thread>
#include <string>
#include <vector>

#include "sluice/io/async_reader.h"
#include "sluice/batch_copy.h"
#include "sluice/loader.h"
#include "sluice/producer.h"
#include "sluice/io/file_source.h"
#include "sluice/io/tfrecord_stream.h"
#include "sluice/io/tfrecord_writer.h"

namespace fs = std::filesystem;
using namespace sluice::io;

namespace {

struct Config {
  std::string dir;
  std::string files_dir;
  int runs = 5;
  std::size_t files = 100000;
  std::size_t mib = 256;  // per TFRecord case
  std::uint32_t window = 128;
  std::uint32_t threads = 0;  // 0: one per CPU
  std::uint32_t per_job = 32;
};

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

void sync_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd >= 0) {
    ::fdatasync(fd);
    ::close(fd);
  }
}

// Drops the file's clean pages from the page cache; false if the kernel kept them.
void evict(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return;
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
}

std::uint64_t plain_read(const std::vector<std::string>& paths, std::vector<char>& buf) {
  std::uint64_t total = 0;
  for (const std::string& p : paths) {
    int fd = ::open(p.c_str(), O_RDONLY);
    if (fd < 0) std::exit(1);
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    ssize_t n;
    while ((n = ::read(fd, buf.data(), buf.size())) > 0) total += static_cast<std::uint64_t>(n);
    ::close(fd);
  }
  return total;
}

std::uint64_t stream_read(TFRecordStream& stream, std::uint64_t epoch) {
  stream.reset(epoch);
  Sample s;
  std::uint64_t total = 0;
  while (stream.next(s)) total += s.fields[0].bytes.size() + static_cast<std::uint64_t>(s.fields[0].bytes[0]);
  return total;
}

// Each worker streams shards shard_index = worker of `workers`, starting a new
// pass over its partition when it ends, and copies each record into the slot
// (copy_to_batch, as pipeline.lua's fields are stored).
class StreamProducer final : public sluice::Producer {
 public:
  StreamProducer(std::vector<std::string> paths, std::uint32_t workers, std::size_t record_bytes)
      : paths_(std::move(paths)), workers_(workers), record_bytes_(record_bytes) {}
  void start_worker(std::uint32_t worker) override {
    StreamOptions o;
    o.shard_index = worker;
    o.shard_count = workers_;
    stream_ = std::make_unique<TFRecordStream>(paths_, o);
  }
  void fill(sluice::BatchContext& batch) override {
    for (std::size_t j = 0; j < batch.size(); ++j) {
      batch.begin_sample(j);
      while (!stream_->next(sample_)) stream_->reset(++pass_);
      const auto bytes = sample_.fields[0].bytes;
      if (bytes.size() != record_bytes_) throw std::runtime_error("unexpected record size");
      sluice::copy_to_batch(batch.data(0, j), bytes.data(), bytes.size());
    }
  }

 private:
  std::vector<std::string> paths_;
  std::uint32_t workers_;
  std::size_t record_bytes_;
  std::unique_ptr<TFRecordStream> stream_;
  std::uint64_t pass_ = 0;
  Sample sample_;
};

struct Timing {
  std::vector<double> ratios, base_gbs, sluice_gbs;
  void add(double base_seconds, double sluice_seconds, double bytes) {
    ratios.push_back(base_seconds / sluice_seconds);
    base_gbs.push_back(bytes / base_seconds / 1e9);
    sluice_gbs.push_back(bytes / sluice_seconds / 1e9);
  }
};

void tfrecord_case(const Config& c, std::size_t record_bytes, const char* label) {
  const std::size_t shards = 4;
  const std::size_t per_shard = c.mib * 1024 * 1024 / record_bytes / shards;
  std::vector<std::string> paths;
  std::vector<std::byte> record(record_bytes);
  std::mt19937_64 rng(1);
  for (auto& b : record) b = std::byte(rng());
  for (std::size_t k = 0; k < shards; ++k) {
    paths.push_back(c.dir + "/" + label + "-" + std::to_string(k) + ".tfrecord");
    TFRecordWriter w(paths.back());
    for (std::size_t i = 0; i < per_shard; ++i) {
      record[0] = std::byte(i);
      w.write(record);
    }
    w.close();
    sync_file(paths.back());
    // Dropped and read back below, as a dataset read in an earlier epoch sits
    // in the page cache (written pages and read-ahead pages differ in folio
    // size, which changes copy speed by up to 2x).
    evict(paths.back());
  }
  std::vector<char> buf(256 * 1024);
  const double bytes = static_cast<double>(per_shard * shards * (record_bytes + 16));
  TFRecordStream stream(paths);
  for (bool cold : {false, true}) {
    Timing t;
    plain_read(paths, buf);  // warm up
    stream_read(stream, 0);
    for (int r = 0; r < c.runs; ++r) {
      if (cold) for (auto& p : paths) evict(p);
      double t0 = now();
      plain_read(paths, buf);
      double t1 = now();
      if (cold) for (auto& p : paths) evict(p);
      double t2 = now();
      stream_read(stream, static_cast<std::uint64_t>(r));
      double t3 = now();
      t.add(t1 - t0, t3 - t2, bytes);
    }
    std::printf("tfrecord stream %-5s records, %zu MiB, %s cache: plain read %.2f GB/s, "
                "one TFRecordStream %.2f GB/s, ratio %.2f (median of %d; target >= 0.8)\n",
                label, c.mib, cold ? "cold" : "warm", median(t.base_gbs), median(t.sluice_gbs),
                median(t.ratios), c.runs);
  }

  // Through a Loader: one pass over the shards' records per timed run, after a
  // warm-up pass that starts the workers and fills every slot once.
  const std::uint32_t workers = std::min<std::uint32_t>(c.threads, shards);
  const std::size_t per_batch = std::max<std::size_t>(1, 8 * 1024 * 1024 / record_bytes);
  const std::uint64_t batches = per_shard * shards / per_batch;
  sluice::Options o;
  o.dataset_size = std::uint64_t{1} << 40;  // streams wrap around: the plan only counts batches
  o.batch_size = static_cast<std::uint32_t>(per_batch);
  o.fields = {{"data", sluice::DType::u8, {static_cast<std::int64_t>(record_bytes)}}};
  o.producer = std::make_shared<StreamProducer>(paths, workers, record_bytes);
  o.workers = workers;
  o.ordered = false;
  // The plain reads run before the Loader starts and after it stops (its
  // workers refill their slots whenever the consumer pauses, which would slow
  // them); the Loader's passes run back to back, so each starts and ends with
  // the pipeline in the same state.
  std::vector<double> base_gbs;
  const double pass_bytes = static_cast<double>(batches * per_batch * (record_bytes + 16));
  auto plain_runs = [&] {
    for (int r = 0; r < (c.runs + 1) / 2; ++r) {
      double t0 = now();
      plain_read(paths, buf);
      base_gbs.push_back(bytes / (now() - t0) / 1e9);
    }
  };
  // The page cache as the warm runs above found it: filled by plain reads.
  for (auto& p : paths) evict(p);
  plain_read(paths, buf);
  plain_runs();
  std::vector<double> sluice_gbs;
  {
    sluice::Loader loader(o);
    auto consume = [&](std::uint64_t n) {
      std::uint64_t touched = 0;
      for (std::uint64_t i = 0; i < n; ++i) {
        std::optional<sluice::Batch> batch = loader.next();
        if (!batch) std::exit(1);
        // One byte of the first and last record: reading the batch is the
        // trainer's work (the plain read loop never reads its buffer either).
        const auto data = batch->field(0).as<const std::uint8_t>();
        touched += data.front() + data[data.size() - record_bytes];
      }
      return touched;
    };
    consume(batches);
    for (int r = 0; r < c.runs; ++r) {
      double t0 = now();
      consume(batches);
      sluice_gbs.push_back(pass_bytes / (now() - t0) / 1e9);
    }
  }
  plain_runs();
  std::printf("tfrecord stream %-5s records, %zu MiB, warm cache: plain read %.2f GB/s, "
              "sluice pipeline (%u workers, records copied into batches) %.2f GB/s, ratio %.2f "
              "(medians of %zu and %d; target >= 0.8)\n",
              label, c.mib, median(base_gbs), workers, median(sluice_gbs),
              median(sluice_gbs) / median(base_gbs), base_gbs.size(), c.runs);
  for (auto& p : paths) fs::remove(p);
}

std::uint64_t sync_loop(const std::vector<std::string>& paths, const std::vector<std::uint64_t>& order,
                        std::vector<char>& buf) {
  std::uint64_t total = 0;
  for (std::uint64_t i : order) {
    int fd = ::open(paths[i].c_str(), O_RDONLY);
    if (fd < 0) std::exit(1);
    struct stat st;
    ::fstat(fd, &st);
    if (static_cast<std::size_t>(st.st_size) > buf.size()) buf.resize(st.st_size);
    total += static_cast<std::uint64_t>(::read(fd, buf.data(), st.st_size));
    ::close(fd);
  }
  return total;
}

std::uint64_t async_loop(const std::shared_ptr<FileSource>& source,
                         const std::vector<std::uint64_t>& order, const Config& c) {
  ReaderOptions options;
  options.window = c.window;
  options.io_threads = c.threads;
  options.slot_bytes = 16 * 1024;
  options.files_per_job = c.per_job;
  AsyncReader reader(source, options);
  reader.enqueue(order);
  std::uint64_t total = 0;
  while (const Sample* s = reader.next()) total += s->fields[0].bytes.size();
  return total;
}

// The small files under c.files_dir: made on first use, then reused (a
// ".complete" marker says a previous run finished making them).
std::vector<std::string> small_files(const Config& c) {
  std::vector<std::string> paths;
  const std::string marker = c.files_dir + "/.complete";
  const bool made = fs::exists(marker);
  std::mt19937_64 rng(2);
  std::vector<char> content(8192, 'x');
  for (std::size_t i = 0; i < c.files; ++i) {
    const std::string sub = c.files_dir + "/" + std::to_string(i / 1000);
    if (!made && i % 1000 == 0) fs::create_directories(sub);
    paths.push_back(sub + "/" + std::to_string(i) + ".bin");
    const std::size_t size = 1024 + rng() % 4096;
    if (made) continue;
    std::FILE* f = std::fopen(paths.back().c_str(), "wb");
    if (!f || std::fwrite(content.data(), 1, size, f) != size || std::fclose(f) != 0) {
      std::fprintf(stderr, "cannot write %s\n", paths.back().c_str());
      std::exit(1);
    }
  }
  if (!made) {
    ::sync();
    std::FILE* f = std::fopen(marker.c_str(), "wb");
    if (f) std::fclose(f);
  }
  return paths;
}

void small_files_case(const Config& c) {
  std::vector<std::string> paths = small_files(c);
  std::mt19937_64 rng(3);
  auto source = FileSource::from_list(paths);
  std::vector<std::uint64_t> order(paths.size());
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<char> buf(8192);
  const int runs = std::max(3, c.runs / 2 * 2 - 1);
  for (bool cold : {false, true}) {
    std::vector<double> ratios, base_rate, sluice_rate;
    sync_loop(paths, order, buf);  // warm up
    for (int r = 0; r < runs; ++r) {
      if (cold) for (auto& p : paths) evict(p);
      double t0 = now();
      sync_loop(paths, order, buf);
      double t1 = now();
      if (cold) for (auto& p : paths) evict(p);
      double t2 = now();
      async_loop(source, order, c);
      double t3 = now();
      ratios.push_back((t1 - t0) / (t3 - t2));
      base_rate.push_back(static_cast<double>(paths.size()) / (t1 - t0));
      sluice_rate.push_back(static_cast<double>(paths.size()) / (t3 - t2));
    }
    std::printf("random access, %zu small files (1-5 KiB), %s cache: sync loop %.0f files/s, "
                "sluice (window %u, %u threads) %.0f files/s, ratio %.2f (median of %d; target >= 2)\n",
                paths.size(), cold ? "cold" : "warm", median(base_rate), c.window, c.threads,
                median(sluice_rate), median(ratios), runs);
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // each result as soon as it is known
  Config c;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--dir") c.dir = value();
    else if (a == "--runs") c.runs = std::stoi(value());
    else if (a == "--files") c.files = std::stoul(value());
    else if (a == "--mib") c.mib = std::stoul(value());
    else if (a == "--window") c.window = static_cast<std::uint32_t>(std::stoul(value()));
    else if (a == "--threads") c.threads = static_cast<std::uint32_t>(std::stoul(value()));
    else if (a == "--per-job") c.per_job = static_cast<std::uint32_t>(std::stoul(value()));
    else {
      std::fprintf(stderr,
                   "usage: sluice_io_bench [--dir DIR] [--files-dir DIR] [--runs N] [--files N] "
                   "[--mib N] [--window N] [--threads N] [--per-job N]\n");
      return 2;
    }
  }
  bool made_dir = false;
  if (c.dir.empty()) {
    std::string tmpl = (fs::temp_directory_path() / "sluice-io-bench-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) return 1;
    c.dir = tmpl;
    made_dir = true;
  }
  if (c.threads == 0) c.threads = std::max(1u, std::thread::hardware_concurrency());
  if (c.files_dir.empty())
    c.files_dir = (fs::temp_directory_path() / ("sluice-io-bench-files-" + std::to_string(c.files))).string();
  std::printf("sluice_io_bench: %u CPUs, TFRecord shards in %s, small files in %s\n",
              std::thread::hardware_concurrency(), c.dir.c_str(), c.files_dir.c_str());
  std::printf("tfrecord: one TFRecordStream (framing, both CRC32Cs, reset per run), and a Loader "
              "with one streaming worker per CPU; plain = one thread, read(2) into a reused 256 KiB "
              "buffer\n");
  std::printf("small files: sluice = AsyncReader (libuv, window %u, %u pool threads, %u files per "
              "job); sync = one thread, open/fstat/read/close per file\n",
              c.window, c.threads, c.per_job);
  tfrecord_case(c, 4 * 1024, "4KiB");
  tfrecord_case(c, 1024 * 1024, "1MiB");
  small_files_case(c);
  if (made_dir) fs::remove_all(c.dir);
  return 0;
}
