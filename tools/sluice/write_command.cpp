// `sluice write`: a pipeline's samples, made in its workers, into shards.
#include "write_command.h"

#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "run_args.h"
#include "signals.h"
#include "skipped_text.h"
#include "sluice/error.h"
#include "sluice/io/batch_writer.h"
#include "sluice/loader.h"
#include "sluice/run_report.h"
#include "sluice/script.h"

namespace sluice::cli {
namespace {

constexpr const char* kHelp =
    "usage: sluice write PIPELINE.lua --to DIR --format tar|tfrecord\n"
    "                    [--shard-size 256MB | --shard-samples N] [settings]\n"
    "\n"
    "Runs a pipeline once (one epoch, in plan order) through its workers and writes\n"
    "every sample its map returns to DIR as shards that other tools read:\n"
    "  tar        WebDataset: one member per field, KEY.EXT, the key the sample id;\n"
    "             a bytes field ({ \"jpg\", \"bytes\", MAX }) is written as it is\n"
    "             (.jpg stays JPEG), an integer scalar as text (NAME.cls), any\n"
    "             other field as a .npy (NAME.npy)\n"
    "  tfrecord   tf.train.Example per sample (a feature per field, and __key__)\n"
    "each shard with its index FILE.idx beside it (a remote reader fetches only\n"
    "the indexes when it opens, and its workers the shards as they need them),\n"
    "and DIR/manifest.json: every shard with its samples, bytes and xxh3 checksum,\n"
    "and the fields' dtypes and shapes (sluice inspect DIR shows it, sluice verify\n"
    "DIR checks the shards against it; the readers check a shard when first read).\n"
    "\n"
    "options:\n"
    "  --to DIR           the folder (created), s3://bucket/prefix/, or\n"
    "                     https://host/path/ on a server taking PUT: each shard is\n"
    "                     staged locally, uploaded (S3: multipart when large),\n"
    "                     deleted here, then listed in the manifest uploaded after it\n"
    "  --staging DIR      for a URL: the local folder shards are staged in\n"
    "                     (default: the cache folder, --cache-dir or\n"
    "                     $SLUICE_CACHE_DIR, /write/...)\n"
    "  --format F         tar (default) or tfrecord\n"
    "  --shard-size S     close a shard before the sample that would take it past S\n"
    "                     bytes (default 256MB; KB, MB, GB, KiB, MiB, GiB)\n"
    "  --shard-samples N  N samples per shard instead\n"
    "  --skip-log FILE    one JSON line per sample on_error = \"skip\" dropped, as for\n"
    "                     sluice run: {\"sample\": ID, \"reason\": \"...\"}\n"
    "  -h, --help         this help\n"
    "\n"
    "Shards hold the samples in plan order, so their names and bytes do not depend\n"
    "on the worker count. Each is written as NAME.tmp, fsynced, renamed, then listed\n"
    "in the manifest: run the same command again after a crash or kill and it keeps\n"
    "the listed shards and redoes the rest (in a store: those the manifest there\n"
    "lists and the store holds whole). The manifest records the plan (dataset size,\n"
    "batch size, shuffle, seed, rank and world size, the pipeline's hash; not the\n"
    "worker count): a resume with another plan is refused, naming what differs.\n"
    "\n"
    "settings (override the script, as for sluice run): -w/--workers, -b/--batch-size,\n"
    "--seed, --shuffle/--no-shuffle, --on-error, ... (sluice run --help); epochs is 1.\n"
    "\n"
    "Exit status: 0 written, 1 the pipeline or a write failed, 2 usage; 130 after\n"
    "Ctrl-C and 143 after SIGTERM, which stop it at once keeping the complete shards.\n";

constexpr std::string_view kValueOptions[] = {"--to", "--format", "--shard-size", "--shard-samples", "--staging",
                                                 "--skip-log"};

struct WriteArgs {
  RunSettings settings;
  bool help = false;
  std::string to;
  std::string staging;
  std::string skip_log;
  std::string format = "tar";
  std::uint64_t shard_bytes = 0;
  std::uint64_t shard_samples = 0;
};

// "256MB", "1GiB", "4096".
std::uint64_t parse_size(std::string_view text) {
  std::size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  const std::string_view unit = text.substr(digits);
  struct Unit {
    std::string_view name;
    std::uint64_t scale;
  };
  static constexpr Unit kUnits[] = {{"", 1}, {"B", 1}, {"KB", 1000}, {"MB", 1000'000}, {"GB", 1000'000'000},
                                    {"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1ull << 30}};
  for (const Unit& u : kUnits) {
    if (digits == 0 || u.name != unit) continue;
    const std::uint64_t n = parse_count("--shard-size", text.substr(0, digits), (1ull << 50) / u.scale);
    if (n * u.scale < 1024) throw UsageError{"--shard-size " + std::string(text) + " is less than 1 KiB"};
    return n * u.scale;
  }
  throw UsageError{"--shard-size expects a size such as 256MB or 1GiB, got '" + std::string(text) + "'"};
}

WriteArgs parse(int argc, char** argv) {
  SettingsLine line = parse_settings_line(argc, argv, "write", {kValueOptions, {}});
  WriteArgs args;
  args.settings = std::move(line.settings);
  args.help = line.help;
  for (const auto& [name, value] : line.own) {
    if (name == "--to") {
      args.to = value;
    } else if (name == "--staging") {
      args.staging = value;
    } else if (name == "--skip-log") {
      args.skip_log = value;
    } else if (name == "--format") {
      if (value != "tar" && value != "tfrecord") throw UsageError{"--format expects tar or tfrecord"};
      args.format = value;
    } else if (name == "--shard-size") {
      args.shard_bytes = parse_size(value);
    } else if (name == "--shard-samples") {
      args.shard_samples = parse_count(name, value, 1ull << 40);
      if (args.shard_samples == 0) throw UsageError{"--shard-samples expects at least 1"};
    }
  }
  if (args.help) return args;
  if (args.to.empty()) throw UsageError{"--to DIR is required"};
  const bool remote = args.to.rfind("s3://", 0) == 0 || args.to.rfind("http://", 0) == 0 ||
                      args.to.rfind("https://", 0) == 0;
  if (args.to.find("://") != std::string::npos && !remote)
    throw UsageError{"--to " + args.to + ": only local folders and s3://, http:// and https:// URLs can be written"};
  if (!args.staging.empty() && !remote)
    throw UsageError{"--staging is for --to s3://... or https://..."};
  if (args.shard_bytes && args.shard_samples) throw UsageError{"give --shard-size or --shard-samples, not both"};
  if (!args.shard_bytes && !args.shard_samples) args.shard_bytes = 256'000'000;
  return args;
}

int write(WriteArgs& args) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  args.settings.set("epochs", "1");
  Script script = args.settings.load();
  for (const std::string& note : script.notes) std::fprintf(stderr, "note: %s\n", note.c_str());
  Options& o = script.options;

  io::ShardWriterOptions wo;
  wo.dir = args.to;
  wo.format = args.format;
  wo.shard_samples = args.shard_samples;
  wo.shard_bytes = args.shard_bytes;
  wo.staging = args.staging;
  wo.plan = io::write_plan(o, record_header(script).script_hash);
  wo.remote_retries = args.settings.script_options().remote_retries;
  wo.remote_timeout_ms = args.settings.script_options().remote_timeout_ms;
  wo.cache_dir = args.settings.script_options().cache_dir.value_or("");
  io::BatchWriter writer(o.fields, wo);
  const io::ShardWriter& shards = writer.shards();
  for (const std::string& note : shards.notes()) std::fprintf(stderr, "note: %s\n", note.c_str());
  if (shards.already_complete()) {
    std::printf("%s is already written and complete (%zu shards, %llu samples)\n", args.to.c_str(),
                shards.shards_kept(), static_cast<unsigned long long>(shards.samples_kept()));
    return 0;
  }
  if (shards.shards_kept() > 0)
    std::fprintf(stderr, "resuming %s: %zu shards (%llu samples) kept, from batch %llu\n", args.to.c_str(),
                 shards.shards_kept(), static_cast<unsigned long long>(shards.samples_kept()),
                 static_cast<unsigned long long>(shards.resume_batch()));
  writer.prepare(o);
  SkipReport skips(args.skip_log, nullptr);
  // Ctrl-C or SIGTERM (a preempted job): the shards published so far stay,
  // the one being written is dropped, and the same command goes on from there.
  auto stopped = [&](int signal) {
    const io::Manifest& kept = writer.stop();
    std::fprintf(stderr, "sluice write: stopped by %s: %s keeps %zu complete shards (%llu samples); run the same "
                         "command again to go on from there\n",
                 signal == SIGINT ? "Ctrl-C (SIGINT)" : "SIGTERM", args.to.c_str(), kept.shards.size(),
                 static_cast<unsigned long long>(kept.samples()));
    return 128 + signal;
  };
  if (const int signal = signal_received()) {
    stop_startup_watch();
    return stopped(signal);
  }
  Loader loader(o);
  SignalScope signals(loader);
  try {
    while (std::optional<Batch> batch = loader.next()) {
      writer.write(*batch);
      skips.update(loader.stats());
    }
  } catch (const Error&) {
    skips.update(loader.stats());  // what was skipped before the failure
    throw;
  }
  skips.update(loader.stats());
  if (const int signal = signal_received()) return stopped(signal);
  const std::uint64_t written = writer.samples_written();
  const io::Manifest& m = writer.finish();
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  std::printf("wrote %s: %zu %s shards, %llu samples, %.1f MB (%llu samples this run in %.2f s, %.0f samples/s)\n",
              args.to.c_str(), m.shards.size(), m.shard_format.c_str(),
              static_cast<unsigned long long>(m.samples()), static_cast<double>(m.bytes()) / 1e6,
              static_cast<unsigned long long>(written), seconds, static_cast<double>(written) / seconds);
  if (const Stats stats = loader.stats(); !stats.skipped_samples.empty())
    std::printf("skipped %s\n", describe_skipped(stats, !args.skip_log.empty()).c_str());
  return 0;
}

}  // namespace

int write_command(int argc, char** argv) {
  WriteArgs args;
  try {
    args = parse(argc, argv);
  } catch (const UsageError& e) {
    std::fprintf(stderr, "sluice write: %s\n", e.message.c_str());
    return 2;
  }
  if (args.help) {
    std::fputs(kHelp, stdout);
    return 0;
  }
  try {
    return write(args);
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "sluice write: error: %s\n", e.what());
    return 1;
  }
}

}  // namespace sluice::cli
