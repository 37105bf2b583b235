// sluice_parquet_bench: rows per second from Parquet files into batches, one
// worker (this thread), against DuckDB scanning the same columns on one
// thread in the same run (parquet_bench.mjs writes the files with DuckDB and
// times its scans).
//
//   sluice_parquet_bench NPM_DIR [RUNS [TABLE...]]
//
// NPM_DIR holds node_modules with @duckdb/node-api (tests/npm/package.json,
// e.g. build-cc/npm after the Parquet oracle test ran). For each table
// (16 float32 columns; one string column of 1-4 KiB per row; snappy and
// zstd) it prints the median rows/s (runs alternating between DuckDB and
// Sluice) of DuckDB's `SET threads = 1; SELECT
// sum(...)` or `sum(length(s))`, of Sluice reading every row in order into
// batches of 256 rows (consecutive rows of fixed-size columns copied column
// by column, ParquetReader::read_run), and of Sluice reading them shuffled
// within a window of 2 row groups (each group decoded once, a batch's rows
// gathered group by group, the columns that lie side by side in the group's
// interleaved rows and in the slot with one copy a row: read_group,
// join_runs, gather_rows; strings row by row), with the ratios (targets: >= 0.8
// of DuckDB, shuffled >= 0.7 of sequential) and this machine's first-touch
// cost per page.
// For every table it also times the real pipeline: rows/s out of a
// sluice::Loader with 1 worker over `source = sluice.parquet{...}` without a
// map (load_script of a generated pipeline.lua, batches of 256, in order,
// 3 epochs timed after the first batch, the consumer touching every page of
// every batch, so that row groups are decoded as they are reached, as in a
// real epoch), where the worker copies
// runs of rows column by column (RecordFeed::fill_parquet), and the same
// pipeline with an identity map (`map = function(s) return s.fields end`),
// which takes every row through Lua's per-sample path as every pipeline
// did before (1 epoch: it is ~100x slower); both against the same DuckDB
// runs (target >= 0.8); and the
// pipeline without a map shuffled in a window of 2 row groups
// (shuffle_window = 2: the worker gathers each batch's rows from their row
// groups), against the one in order (target >= 0.7). The text tables'
// pipelines declare the string a bytes field of 4096 bytes.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <span>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness.h"
#include "loader_rate.h"
#include "sluice/io/parquet.h"
#include "sluice/loader.h"
#include "sluice/script.h"

namespace fs = std::filesystem;
using sluice::bench::median;
using sluice::bench::Stopwatch;

namespace {

constexpr std::size_t kBatch = 256;
constexpr std::size_t kAhead = 8;  // rows prefetched ahead of the one read
// Epochs of the pipelines without a map, timed after their first batch: that
// batch (untimed, the worker's start) decodes one row group in order and the
// two of the first window shuffled; over 3 epochs the group it keeps off the
// clock for a shuffled run is 1 of 24 decoded (text) or of 51 (numeric).
constexpr int kEpochs = 3;

// {"name":[s, s, ...], ...} as printed by parquet_bench.mjs.
std::map<std::string, std::vector<double>> parse_times(const std::string& json) {
  std::map<std::string, std::vector<double>> out;
  std::size_t at = 0;
  while ((at = json.find('"', at)) != std::string::npos) {
    const std::size_t end = json.find('"', at + 1);
    const std::string name = json.substr(at + 1, end - at - 1);
    std::size_t open = json.find('[', end), close = json.find(']', open);
    std::stringstream list(json.substr(open + 1, close - open - 1));
    std::string item;
    while (std::getline(list, item, ',')) out[name].push_back(std::strtod(item.c_str(), nullptr));
    at = close;
  }
  return out;
}

// Copies row `row`'s values into its slot at dst, one after another (a
// string cut at the slot's end); values that lie next to each other in the
// reader (an interleaved row's fixed-size columns) go in one memcpy.
void copy_row(sluice::io::ParquetReader& reader, std::uint64_t row, std::span<sluice::io::ParquetValue> values,
              std::byte* dst, std::size_t slot) {
  reader.read(row, values);
  const std::byte* from = nullptr;
  std::size_t bytes = 0;
  for (const sluice::io::ParquetValue& v : values) {
    const std::size_t n = std::min(v.bytes, slot - bytes);
    if (from != nullptr && v.data == from + bytes) {
      bytes += n;
      continue;
    }
    if (from != nullptr) std::memcpy(dst, from, bytes), dst += bytes, slot -= bytes;
    from = v.data;
    bytes = n;
  }
  if (from != nullptr) std::memcpy(dst, from, bytes);
}

bool dense(const std::vector<sluice::io::ParquetColumnRun>& runs) {
  return std::all_of(runs.begin(), runs.end(), [](const auto& r) { return r.data != nullptr; });
}

// Reads `order`'s rows into batches of kBatch rows: each row's values copied
// into its slot (numeric: 16 float32; text: the string into a 4 KiB slot).
// Where a batch's rows are consecutive rows of a row group whose columns are
// all fixed-size without nulls, each column's run is copied into the slots
// with one strided loop (ParquetReader::read_run); the batch's other rows
// are gathered row group by row group, each column's values for all of the
// group's rows with one loop (read_group, gather_rows; columns side by side
// in the group's interleaved rows and in the slot joined, join_runs, so a
// numeric row is one copy), or read one by one
// where a column is not dense (strings), as RecordFeed::fill_parquet does.
// The reader lives as long as a worker's would: its decoded groups are
// dropped before each run, its buffers kept. Returns seconds.
double read_rows(sluice::io::ParquetReader& reader, const std::vector<std::uint64_t>& order, std::uint64_t* checksum) {
  reader.clear();
  const std::size_t columns = reader.column_names().size();
  const std::size_t slot = columns == 1 ? 4096 : columns * 4;
  std::vector<std::byte> batch(kBatch * slot);
  std::vector<sluice::io::ParquetValue> values(columns);
  std::vector<sluice::io::ParquetColumnRun> runs(columns), joined(columns);
  std::vector<std::uint32_t> scattered, at;  // rows of the batch not in a run; those of one group
  std::vector<std::uint64_t> rows;           // theirs, within the group
  std::uint64_t sum = 0;
  const Stopwatch clock;
  for (std::size_t first = 0; first < order.size(); first += kBatch) {
    const std::size_t last = std::min(first + kBatch, order.size());
    scattered.clear();
    for (std::size_t i = first; i < last;) {
      std::size_t consecutive = 1;
      while (i + consecutive < last && order[i + consecutive] == order[i] + consecutive) ++consecutive;
      std::byte* dst = batch.data() + (i - first) * slot;
      if (consecutive == 1) {
        scattered.push_back(static_cast<std::uint32_t>(i++ - first));
        continue;
      }
      const std::uint64_t n = reader.read_run(order[i], consecutive, runs);
      if (dense(runs)) {
        std::size_t offset = 0;
        for (const sluice::io::ParquetColumnRun& run : runs) {
          sluice::io::copy_run(run, n, dst + offset, slot);
          offset += run.width;
        }
      } else {
        for (std::uint64_t k = 0; k < n; ++k) copy_row(reader, order[i + k], values, dst + k * slot, slot);
      }
      i += n;
    }
    while (!scattered.empty()) {
      const auto [begin, end] = reader.read_group(order[first + scattered.front()], runs);
      sluice::io::take_group_rows(std::span(order).subspan(first, last - first), begin, end, scattered, rows, at);
      if (dense(runs)) {
        // The slot holds the columns side by side, as the group's
        // interleaved rows do: one copy of each row (join_runs).
        joined = runs;
        const std::size_t count = sluice::io::join_runs(joined);
        std::size_t offset = 0;
        for (std::size_t k = 0; k < count; ++k) {
          sluice::io::gather_rows(joined[k], rows, at, batch.data() + offset, slot);
          offset += joined[k].width;
        }
        continue;
      }
      for (std::size_t k = 0; k < at.size(); ++k) {
        if (k + 2 * kAhead < at.size()) reader.prefetch_offsets(begin + rows[k + 2 * kAhead]);  // rows known
        if (k + kAhead < at.size()) reader.prefetch(begin + rows[k + kAhead]);
        copy_row(reader, begin + rows[k], values, batch.data() + at[k] * slot, slot);
      }
    }
    sum += static_cast<std::uint64_t>(batch[0]);
  }
  const double seconds = clock.seconds();
  *checksum += sum;
  return seconds;
}

// Row groups in a shuffled order, taken two at a time; each pair's rows shuffled.
std::vector<std::uint64_t> window_shuffle(const sluice::io::ParquetFile& file, std::uint64_t seed) {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> groups;
  std::uint64_t at = 0;
  for (const auto& g : file.row_groups()) groups.emplace_back(at, g.rows), at += g.rows;
  std::mt19937_64 rng(seed);
  std::shuffle(groups.begin(), groups.end(), rng);
  std::vector<std::uint64_t> order;
  for (std::size_t g = 0; g < groups.size(); g += 2) {
    const std::size_t first = order.size();
    for (std::size_t k = g; k < std::min(g + 2, groups.size()); ++k)
      for (std::uint64_t r = 0; r < groups[k].second; ++r) order.push_back(groups[k].first + r);
    std::shuffle(order.begin() + static_cast<std::ptrdiff_t>(first), order.end(), rng);
  }
  return order;
}

// What the memory system charges a shuffled read: the bytes of each row of
// the first window (two row groups, decoded and, numeric, interleaved as a
// shuffled read leaves them) copied with one memcpy a row into batch-sized
// scratch, prefetched kAhead rows ahead, in order and in a shuffled order,
// outside any reader or pipeline: nanoseconds a row each way (medians of
// `runs` alternating pairs), and the window's bytes.
struct CopyCost {
  double in_order_ns = 0, shuffled_ns = 0;
  std::uint64_t window_bytes = 0;
};

CopyCost copy_cost(sluice::io::ParquetReader& reader, const sluice::io::ParquetFile& file, int runs) {
  reader.clear();
  const std::size_t columns = reader.column_names().size();
  const std::size_t slot = columns == 1 ? 4096 : columns * 4;
  std::uint64_t rows = 0;
  for (std::size_t g = 0; g < std::min<std::size_t>(2, file.row_groups().size()); ++g) rows += file.row_groups()[g].rows;
  std::vector<sluice::io::ParquetColumnRun> group(columns);
  reader.read_group(0, group);  // decoded and interleaved, as a shuffled read leaves it
  if (rows > file.row_groups()[0].rows) reader.read_group(file.row_groups()[0].rows, group);
  std::vector<sluice::io::ParquetValue> values(columns);
  std::vector<const std::byte*> from(rows);
  std::vector<std::size_t> bytes(rows);
  CopyCost cost;
  for (std::uint64_t r = 0; r < rows; ++r) {
    reader.read(r, values);
    from[r] = values[0].data;
    bytes[r] = 0;
    for (const auto& v : values) bytes[r] += v.bytes;  // an interleaved row's values lie side by side
    bytes[r] = std::min(bytes[r], slot);
    cost.window_bytes += bytes[r];
  }
  std::vector<std::uint64_t> in_order(rows);
  std::iota(in_order.begin(), in_order.end(), 0);
  std::vector<std::uint64_t> shuffled = in_order;
  std::mt19937_64 rng(3);
  std::shuffle(shuffled.begin(), shuffled.end(), rng);
  std::vector<std::byte> batch(kBatch * slot);
  auto ns_a_row = [&](const std::vector<std::uint64_t>& order) {
    const Stopwatch clock;
    for (std::size_t i = 0; i < order.size(); ++i) {
      if (i + kAhead < order.size()) reader.prefetch(order[i + kAhead]);  // as a batch filler asks it
      std::memcpy(batch.data() + (i % kBatch) * slot, from[order[i]], bytes[order[i]]);
    }
    return clock.seconds() * 1e9 / static_cast<double>(order.size());
  };
  std::vector<double> seq, shuf;
  for (int k = 0; k < runs; ++k) {
    seq.push_back(ns_a_row(in_order));
    shuf.push_back(ns_a_row(shuffled));
  }
  cost.in_order_ns = median(seq);
  cost.shuffled_ns = median(shuf);
  return cost;
}

// A pipeline.lua over `table` (every column a field, batches of 256, 1
// worker, `epochs` epochs), with `parts` (fields, map; "" for none), in order or
// shuffled in a window of 2 row groups.
std::string write_pipeline(const fs::path& dir, const fs::path& table, const std::string& name, const std::string& parts,
                           int epochs, bool shuffled = false) {
  const fs::path path = dir / (name + ".lua");
  std::ofstream out(path);
  out << "local sluice = require('sluice')\nreturn sluice.pipeline {\n  source = sluice.parquet{ '"
      << fs::absolute(table).string() << "' },\n" << parts << "  batch_size = " << kBatch
      << (shuffled ? ", shuffle = true, shuffle_window = 2, seed = 7" : ", shuffle = false")
      << ", workers = 1, epochs = " << epochs << ",\n}\n";
  return path.string();
}

// Rows per second out of a Loader running `script`, the consumer touching
// every page of every batch; the first batch (the worker's start) untimed.
double pipeline_rate(const std::string& script) {
  sluice::Script s = sluice::load_script({.path = script});
  sluice::Loader loader(s.options);
  return sluice::bench::loader_rate(loader, [](const sluice::Batch& b) { return static_cast<double>(b.size()); });
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: sluice_parquet_bench NPM_DIR [RUNS [TABLE...]]\n");
    return 2;
  }
  const fs::path npm = argv[1];
  const int runs = argc > 2 ? std::atoi(argv[2]) : 5;
  const std::vector<std::string> only(argv + std::min(argc, 3), argv + argc);  // tables to time; none: all
  auto wanted = [&](const std::string& name) {
    return only.empty() || std::find(only.begin(), only.end(), name) != only.end();
  };
  const fs::path data = npm / "parquet-bench-2";  // -2: text tables of 8 row groups
  fs::copy_file(fs::path(SLUICE_PARQUET_BENCH_SCRIPT), npm / "parquet_bench.mjs", fs::copy_options::overwrite_existing);
  // One DuckDB scan of each table (the first call also writes the tables).
  auto duckdb_scan = [&]() {
    const std::string command = "node '" + (npm / "parquet_bench.mjs").string() + "' '" + data.string() + "' 1 > '" +
                                (npm / "parquet_bench.json").string() + "'";
    if (std::system(command.c_str()) != 0) throw std::runtime_error(command + " failed");
    std::ifstream in(npm / "parquet_bench.json");
    std::stringstream json;
    json << in.rdbuf();
    return parse_times(json.str());
  };
  struct Table {
    std::shared_ptr<const sluice::io::ParquetFile> file;
    std::unique_ptr<sluice::io::ParquetReader> seq, shuf;
    std::vector<std::uint64_t> in_order;
    std::vector<double> duck, in_order_rate, shuffled_rate;
    std::string direct, mapped, shuffled;                          // pipeline.lua files
    std::vector<double> direct_rate, mapped_rate, shuffled_direct;  // rows/s out of a Loader
    CopyCost copy;
  };
  std::map<std::string, Table> tables;
  std::uint64_t checksum = 0;
  try {
    for (const auto& [name, ignored] : duckdb_scan()) {
      if (!wanted(name)) continue;
      Table& t = tables[name];
      t.file = std::make_shared<const sluice::io::ParquetFile>((data / (name + ".parquet")).string());
      t.seq = std::make_unique<sluice::io::ParquetReader>(std::vector{t.file}, std::vector<std::string>{});
      t.shuf = std::make_unique<sluice::io::ParquetReader>(std::vector{t.file}, std::vector<std::string>{});
      t.in_order.resize(t.file->rows());
      std::iota(t.in_order.begin(), t.in_order.end(), 0);
      // Warm-up: the file in the page cache, each reader's buffers grown.
      read_rows(*t.seq, t.in_order, &checksum);
      read_rows(*t.shuf, window_shuffle(*t.file, 99), &checksum);
      {
        const std::string fields = name.rfind("text", 0) == 0 ? "  fields = { { 's', 'bytes', 4096 } },\n" : "";
        t.direct = write_pipeline(data, data / (name + ".parquet"), name + "_direct", fields, kEpochs);
        t.mapped = write_pipeline(data, data / (name + ".parquet"), name + "_mapped",
                                  fields + "  map = function(s) return s.fields end,\n", 1);
        t.shuffled = write_pipeline(data, data / (name + ".parquet"), name + "_shuffled", fields, kEpochs, true);
      }
    }
    // Runs alternate between DuckDB and Sluice, so that both see the same
    // machine (others' load on a shared one comes and goes).
    for (int r = 0; r < runs; ++r) {
      for (const auto& [name, seconds] : duckdb_scan()) {
        if (!wanted(name)) continue;
        Table& t = tables.at(name);
        const auto rows = static_cast<double>(t.file->rows());
        t.duck.push_back(rows / seconds.at(0));
        t.in_order_rate.push_back(rows / read_rows(*t.seq, t.in_order, &checksum));
        t.shuffled_rate.push_back(
            rows / read_rows(*t.shuf, window_shuffle(*t.file, static_cast<std::uint64_t>(r)), &checksum));
        t.direct_rate.push_back(pipeline_rate(t.direct));
        t.mapped_rate.push_back(pipeline_rate(t.mapped));
        t.shuffled_direct.push_back(pipeline_rate(t.shuffled));
      }
    }
    for (auto& [name, t] : tables) t.copy = copy_cost(*t.shuf, *t.file, std::max(runs, 5));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sluice_parquet_bench: %s\n", e.what());
    return 1;
  }
  auto millions = [](std::vector<double> v) {
    for (double& x : v) x /= 1e6;
    return sluice::bench::format_values(v, 2);
  };
  const double touch = sluice::bench::first_touch_us();
  std::printf("first-touch cost: %.2f us per 4 KiB page\n", touch);
  for (const auto& [name, t] : tables) {
    const double duck = median(t.duck), seq = median(t.in_order_rate), shuf = median(t.shuffled_rate);
    std::printf("%-15s %8llu rows in %zu row groups: DuckDB 1 thread %.2fM rows/s, Sluice in order %.2fM rows/s "
                "(ratio %.2f, target >= 0.8), shuffled in a 2-group window %.2fM rows/s (%.2f of in order, target "
                ">= 0.7); medians of %d; first touch %.2f us/page\n",
                name.c_str(), static_cast<unsigned long long>(t.file->rows()), t.file->row_groups().size(), duck / 1e6,
                seq / 1e6, seq / duck, shuf / 1e6, shuf / seq, runs, touch);
    std::printf("  runs: in order %s, shuffled %s M rows/s\n", millions(t.in_order_rate).c_str(),
                millions(t.shuffled_rate).c_str());
  }
  for (const auto& [name, t] : tables) {
    const double duck = median(t.duck), direct = median(t.direct_rate), mapped = median(t.mapped_rate);
    std::printf("%-15s pipeline (Loader, 1 worker, batches of %zu, in order, %d epochs, pages touched): no map %.2fM rows/s "
                "(ratio %.2f of DuckDB 1 thread, target >= 0.8), identity map (the per-sample path) %.2fM rows/s "
                "(ratio %.2f); no map / map %.2f; medians of %d; first touch %.2f us/page\n",
                name.c_str(), kBatch, kEpochs, direct / 1e6, direct / duck, mapped / 1e6, mapped / duck, direct / mapped, runs,
                touch);
    const double shuffled = median(t.shuffled_direct);
    std::printf("%-15s pipeline shuffled in a 2-group window (shuffle_window = 2, no map): %.2fM rows/s (%.2f of in "
                "order, target >= 0.7; %.2f of DuckDB 1 thread); medians of %d; first touch %.2f us/page\n",
                name.c_str(), shuffled / 1e6, shuffled / direct, shuffled / duck, runs, touch);
    std::printf("  runs: DuckDB %s, no map %s, map %s, shuffled %s M rows/s\n", millions(t.duck).c_str(),
                millions(t.direct_rate).c_str(), millions(t.mapped_rate).c_str(), millions(t.shuffled_direct).c_str());
    // A shuffled read fetches each row from a random place: the time that
    // costs over fetching it in order, added to the in-order pipeline's time
    // a row, bounds what shuffled / in order can reach on this machine.
    const double extra_ns = std::max(0.0, t.copy.shuffled_ns - t.copy.in_order_ns);
    std::printf("%-15s memory alone: a memcpy of each row's bytes from the decoded first window (%.1f MB), "
                "prefetched as the reader does, %.1f ns a row in order, %.1f shuffled; added to the in-order pipeline's %.1f ns a row, "
                "that bounds the pipeline's shuffled / in order at %.2f (median of %d pairs)\n",
                name.c_str(), static_cast<double>(t.copy.window_bytes) / 1e6, t.copy.in_order_ns, t.copy.shuffled_ns,
                1e9 / direct, (1e9 / direct) / (1e9 / direct + extra_ns), std::max(runs, 5));
  }
  std::printf("(checksum %llu)\n", static_cast<unsigned long long>(checksum));
  return 0;
}
