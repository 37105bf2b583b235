// `sluice run`: a pipeline script through real workers, measured.
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "commands.h"
#include "sluice/error.h"
#include "sluice/loader.h"
#include "sluice/script.h"

namespace sluice::cli {
namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kHelp =
    "usage: sluice run PIPELINE.lua [options]\n"
    "\n"
    "Runs the pipeline a Lua script describes through real worker processes and\n"
    "discards the batches, reporting progress, throughput and where the time went.\n"
    "Options override what the script says.\n"
    "\n"
    "options:\n"
    "  --epochs N      epochs to run; 0 = until --batches is reached or Ctrl-C\n"
    "  --workers N     worker processes (at least 1)\n"
    "  --prefetch N    batch slots in flight; 0 = the runtime default (2 * workers + 2)\n"
    "  --seed N        seed of the shuffle and of ctx.rng (below 2^53)\n"
    "  --batches N     stop after N batches in all (0 = no limit)\n"
    "  --interval S    seconds between progress reports (default: 0.25 on a terminal,\n"
    "                  5 otherwise)\n"
    "  --quiet         no progress reports, only the summary\n"
    "  -h, --help      show this help\n"
    "\n"
    "Progress goes to stderr: a live line on a terminal, plain lines otherwise. The\n"
    "summary goes to stdout. Exit status: 0 when every batch was delivered, 1 when\n"
    "the pipeline failed (its message names the script line), 2 on a usage error.\n";

struct RunArgs {
  ScriptOptions script;
  std::uint64_t batches = 0;  // 0: no limit
  std::optional<double> interval_s;
  bool quiet = false;
  bool help = false;
};

struct UsageError {
  std::string message;
};

std::uint64_t parse_count(std::string_view option, std::string_view text, std::uint64_t max) {
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value > max) {
    throw UsageError{std::string(option) + " expects an integer in [0, " + std::to_string(max) +
                     "], got '" + std::string(text) + "'"};
  }
  return value;
}

double parse_seconds(std::string_view option, std::string_view text) {
  try {
    std::size_t used = 0;
    const double value = std::stod(std::string(text), &used);
    if (used == text.size() && value > 0) return value;
  } catch (const std::exception&) {
  }
  throw UsageError{std::string(option) + " expects a positive number of seconds, got '" +
                   std::string(text) + "'"};
}

RunArgs parse_args(int argc, char** argv) {
  RunArgs args;
  constexpr std::uint64_t kU32 = 0xFFFFFFFFull;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      args.help = true;
      continue;
    }
    if (arg == "--quiet") {
      args.quiet = true;
      continue;
    }
    if (arg.size() < 2 || arg.substr(0, 2) != "--") {
      if (!args.script.path.empty()) {
        throw UsageError{"one pipeline script at a time (got '" + args.script.path + "' and '" +
                         std::string(arg) + "')"};
      }
      args.script.path = std::string(arg);
      continue;
    }
    std::string_view name = arg;
    std::string_view value;
    if (const auto eq = arg.find('='); eq != std::string_view::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
    } else {
      if (i + 1 >= argc) throw UsageError{std::string(name) + " needs a value"};
      value = argv[++i];
    }
    if (name == "--epochs") {
      args.script.epochs = static_cast<std::uint32_t>(parse_count(name, value, kU32));
    } else if (name == "--workers") {
      args.script.workers = static_cast<std::uint32_t>(parse_count(name, value, kU32));
      if (*args.script.workers == 0) throw UsageError{"--workers must be at least 1"};
    } else if (name == "--prefetch") {
      args.script.prefetch = static_cast<std::uint32_t>(parse_count(name, value, kU32));
    } else if (name == "--seed") {
      args.script.seed = parse_count(name, value, (std::uint64_t{1} << 53) - 1);
    } else if (name == "--batches") {
      args.batches = parse_count(name, value, UINT64_MAX);
    } else if (name == "--interval") {
      args.interval_s = parse_seconds(name, value);
    } else {
      throw UsageError{"unknown option " + std::string(name) + " (see sluice run --help)"};
    }
  }
  if (!args.help && args.script.path.empty()) throw UsageError{"which pipeline? (sluice run PIPELINE.lua)"};
  return args;
}

double seconds(std::uint64_t ns) { return static_cast<double>(ns) / 1e9; }

std::string human_bytes_per_s(double bytes_per_s) {
  char text[32];
  if (bytes_per_s >= 1e9) {
    std::snprintf(text, sizeof text, "%.2f GB/s", bytes_per_s / 1e9);
  } else {
    std::snprintf(text, sizeof text, "%.1f MB/s", bytes_per_s / 1e6);
  }
  return text;
}

std::string describe_fields(const Options& o) {
  std::string text;
  for (const FieldSpec& f : o.fields) {
    if (!text.empty()) text += ", ";
    text += f.name + " " + std::string(dtype_name(f.dtype)) + "[";
    for (std::size_t d = 0; d < f.shape.size(); ++d) {
      text += (d ? "," : "") + std::to_string(f.shape[d]);
    }
    text += "]";
  }
  return text;
}

// Progress reports: a live line rewritten in place on a terminal, plain lines
// otherwise. Reports go to stderr so that stdout holds only the summary.
class Progress {
 public:
  Progress(const RunArgs& args, std::uint64_t total_batches, std::uint32_t epochs)
      : tty_(::isatty(STDERR_FILENO) == 1),
        quiet_(args.quiet),
        interval_(args.interval_s.value_or(tty_ ? 0.25 : 5.0)),
        total_(total_batches),
        epochs_(epochs),
        start_(Clock::now()),
        next_(start_ + to_duration(interval_)) {}

  void update(const Stats& stats, std::uint64_t epoch) {
    const auto now = Clock::now();
    if (quiet_ || now < next_) return;
    next_ = now + to_duration(interval_);
    const double elapsed = std::chrono::duration<double>(now - start_).count();
    char epoch_text[48];
    if (epochs_ == 0) {
      std::snprintf(epoch_text, sizeof epoch_text, "epoch %llu", static_cast<unsigned long long>(epoch + 1));
    } else {
      std::snprintf(epoch_text, sizeof epoch_text, "epoch %llu/%u",
                    static_cast<unsigned long long>(std::min<std::uint64_t>(epoch + 1, epochs_)), epochs_);
    }
    char eta[32] = "";
    const double batch_rate = static_cast<double>(stats.batches_delivered) / elapsed;
    if (total_ > 0 && batch_rate > 0) {
      const double left = static_cast<double>(total_ - std::min(total_, stats.batches_delivered)) / batch_rate;
      std::snprintf(eta, sizeof eta, "  ETA %.1fs", left);
    }
    char line[256];
    std::snprintf(line, sizeof line, "[%6.1fs] %s  batch %llu%s  %.0f samples/s  %.1f batches/s  %s%s",
                  elapsed, epoch_text, static_cast<unsigned long long>(stats.batches_delivered),
                  total_ ? ("/" + std::to_string(total_)).c_str() : "",
                  static_cast<double>(stats.samples_delivered) / elapsed, batch_rate,
                  human_bytes_per_s(static_cast<double>(stats.bytes_delivered) / elapsed).c_str(), eta);
    if (tty_) {
      std::fprintf(stderr, "\r\033[K%s", line);
      live_ = true;
    } else {
      std::fprintf(stderr, "%s\n", line);
    }
    std::fflush(stderr);
  }

  ~Progress() { finish(); }
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // Ends a live line so that what follows starts on its own line.
  void finish() {
    if (live_) std::fprintf(stderr, "\r\033[K");
    live_ = false;
  }

 private:
  static Clock::duration to_duration(double s) {
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
  }
  bool tty_;
  bool quiet_;
  double interval_;
  std::uint64_t total_;
  std::uint32_t epochs_;
  Clock::time_point start_;
  Clock::time_point next_;
  bool live_ = false;
};

// The one-line judgement of what bounds the pipeline.
std::string verdict(double worker_busy, double consumer_wait, std::uint32_t workers) {
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  char text[320];
  if (consumer_wait < 0.15) {
    std::snprintf(text, sizeof text,
                  "consumer-bound: batches were ready before they were asked for (the consumer waited "
                  "%.0f%% of the run); this pipeline can feed a faster trainer",
                  consumer_wait * 100);
  } else if (worker_busy >= 0.75) {
    if (workers < cores) {
      std::snprintf(text, sizeof text,
                    "worker-bound: workers were busy %.0f%% of the time making batches; more workers "
                    "(this machine has %u cores) or a cheaper map would go faster",
                    worker_busy * 100, cores);
    } else {
      std::snprintf(text, sizeof text,
                    "worker-bound: workers were busy %.0f%% of the time making batches and already "
                    "match the %u cores; only a cheaper map (or more cores) would go faster",
                    worker_busy * 100, cores);
    }
  } else {
    std::snprintf(text, sizeof text,
                  "delivery-bound: the consumer waited %.0f%% of the run while workers were busy only "
                  "%.0f%%; try a larger --prefetch, or look for I/O waits inside map",
                  consumer_wait * 100, worker_busy * 100);
  }
  return text;
}

int run(const RunArgs& args) {
  const auto started = Clock::now();
  Script script = load_script(args.script);
  for (const std::string& note : script.notes) std::fprintf(stderr, "note: %s\n", note.c_str());
  const Options& o = script.options;

  Loader loader(script.options);
  const std::uint64_t per_epoch = loader.plan().batches_per_epoch();
  std::uint64_t total = o.epochs == 0 ? 0 : per_epoch * o.epochs;
  if (args.batches > 0) total = total == 0 ? args.batches : std::min(total, args.batches);

  Progress progress(args, total, o.epochs);
  const auto loop_start = Clock::now();
  std::uint64_t delivered = 0;
  while (args.batches == 0 || delivered < args.batches) {
    std::optional<Batch> batch = loader.next();
    if (!batch) break;
    batch->release();
    ++delivered;
    progress.update(loader.stats(), loader.current_epoch());
  }
  const auto loop_end = Clock::now();
  progress.finish();

  const Stats stats = loader.stats();
  const ScriptWorkerTimes times = script.worker_times();
  const double wall = std::chrono::duration<double>(loop_end - loop_start).count();
  const double setup = std::chrono::duration<double>(loop_start - started).count();
  const double worker_span = std::max(1e-9, wall * o.workers);
  const double busy = std::min(1.0, seconds(times.fill_ns) / worker_span);
  const double waited = std::min(1.0, seconds(stats.consumer_wait_ns) / std::max(wall, 1e-9));
  const char* order = o.ordered ? "ordered" : "unordered";
  const std::uint32_t slots = o.slots ? o.slots : 2 * o.workers + 2;

  std::printf("pipeline    %s: %llu samples, batch %u%s, %u worker%s, prefetch %u, %s, %s\n",
              script.path.c_str(), static_cast<unsigned long long>(o.dataset_size), o.batch_size,
              o.drop_last ? " (drop_last)" : "", o.workers, o.workers == 1 ? "" : "s", slots, order,
              script.device.c_str());
  std::printf("fields      %s\n", describe_fields(o).c_str());
  std::printf("delivered   %llu batches, %llu samples, %.1f MB in %.2f s (start-up %.2f s before that)\n",
              static_cast<unsigned long long>(stats.batches_delivered),
              static_cast<unsigned long long>(stats.samples_delivered),
              static_cast<double>(stats.bytes_delivered) / 1e6, wall, setup);
  std::printf("throughput  %.0f samples/s, %.1f batches/s, %s\n",
              static_cast<double>(stats.samples_delivered) / wall,
              static_cast<double>(stats.batches_delivered) / wall,
              human_bytes_per_s(static_cast<double>(stats.bytes_delivered) / wall).c_str());
  std::printf("workers     %.0f%% busy making batches (%.2f s of %u x %.2f s), %.2f s starting Lua, "
              "%.0f%% idle or waiting for free slots\n",
              busy * 100, seconds(times.fill_ns), o.workers, wall, seconds(times.start_ns),
              (1.0 - busy) * 100);
  std::printf("consumer    waited %.2f s for batches (%.0f%% of the run, %llu of %llu next() calls blocked), "
              "at most %u slots in flight\n",
              seconds(stats.consumer_wait_ns), waited * 100,
              static_cast<unsigned long long>(stats.consumer_waits),
              static_cast<unsigned long long>(stats.batches_delivered), stats.max_in_flight);
  std::printf("verdict     %s\n", verdict(busy, waited, o.workers).c_str());
  return 0;
}

}  // namespace

const char* run_help() { return kHelp; }

int run_command(int argc, char** argv) {
  RunArgs args;
  try {
    args = parse_args(argc, argv);
  } catch (const UsageError& e) {
    std::fprintf(stderr, "sluice run: %s\n", e.message.c_str());
    return 2;
  }
  if (args.help) {
    std::fputs(kHelp, stdout);
    return 0;
  }
  try {
    return run(args);
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "sluice run: error: %s\n", e.what());
    return 1;
  }
}

}  // namespace sluice::cli
