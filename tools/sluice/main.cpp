// sluice: the command line.
//
//   sluice run pipeline.lua [options]   run a pipeline, report throughput and bottlenecks
//   sluice bench transport|handoff      runtime benchmarks against memcpy and PyTorch
#include <cstdio>
#include <cstring>
#include <string_view>

#include "bench.h"
#include "commands.h"
#include "io_commands.h"
#include "signals.h"
#include "verify_command.h"
#include "write_command.h"

namespace {

constexpr const char* kUsage = R"(sluice: feeds ML training with batches, from pipelines written in Lua.

usage: sluice <command> [options]

commands:
  run PIPELINE.lua    run a pipeline: progress while it runs, then throughput,
                      where the time went and what bounds the pipeline
                      (sluice run --help lists its options)
  peek PIPELINE.lua   the first batches without training: each field's dtype,
                      shape, min/max/mean/std, the samples' files and class
                      names; --png DIR writes image fields as contact sheets
  bench CASE          runtime benchmarks, as ratios against baselines measured
                      in the same run: transport (64 MiB batches vs memcpy),
                      handoff (small batches per second); both vs PyTorch's
                      DataLoader when it is installed (sluice bench --help)

  inspect FILE|DIR... format, record count, the first records' fields and sizes
                      (TFRecord, WebDataset tar, .npy, .npz, Parquet, JSON lines,
                      plain files); a folder written by sluice write: its
                      manifest; an image folder's classes and counts, and its
                      files that are not images
  write PIPELINE.lua  the pipeline's samples as shards in a folder (--to DIR):
                      WebDataset tars or TFRecords, with a manifest of
                      checksums; resumes where a killed run stopped
  index FILE...       build the offset indexes of TFRecord, tar and JSON lines files
                      (FILE.idx; FILE.plain for compressed JSON lines) ahead of
                      a run, for random access
  verify A B          whether two run records (run --record) saw identical data;
                      otherwise the first batch that differs, and how;
                      --global compares two runs step by step whatever their
                      world sizes; verify DIR checks a written dataset's
                      shards against its manifest (sluice verify --help)

options:
  -h, --help          this text
  --version           the Sluice version
)";

}  // namespace

int main(int argc, char** argv) {
  sluice::cli::install_signal_handlers();  // first: see signals.h
  if (argc < 2 || (std::string_view(argv[1]) != "run" && std::string_view(argv[1]) != "write"))
    sluice::cli::release_signal_handlers();
  if (argc < 2) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  std::string_view command = argv[1];
  if (command == "-h" || command == "--help" || command == "help") {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (command == "--version") {
    std::printf("sluice %s\n", SLUICE_VERSION);
    return 0;
  }
  if (command == "run") return sluice::cli::run_command(argc - 1, argv + 1);
  if (command == "peek") return sluice::cli::peek_command(argc - 1, argv + 1);
  if (command == "bench") return sluice::bench::bench_command(argc - 1, argv + 1);
  if (command == "inspect") return sluice::cli::inspect_command(argc - 1, argv + 1);
  if (command == "index") return sluice::cli::index_command(argc - 1, argv + 1);
  if (command == "write") return sluice::cli::write_command(argc - 1, argv + 1);
  if (command == "verify") return sluice::cli::verify_command(argc - 1, argv + 1);
  std::fprintf(stderr, "sluice: unknown command '%s'\n\n%s", argv[1], kUsage);
  return 2;
}
