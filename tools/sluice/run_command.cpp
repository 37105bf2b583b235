// `sluice run`: a pipeline script through real workers, measured.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fstream>
#include <iterator>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "commands.h"
#include "signals.h"
#include "paths.h"
#include "run_args.h"
#include "skipped_text.h"
#include "verdict.h"
#include "sluice/error.h"
#include "sluice/io/atomic_file.h"
#include "sluice/launcher.h"
#include "sluice/loader.h"
#include "sluice/record.h"
#include "sluice/run_report.h"
#include "sluice/script.h"
#include "sluice/state.h"

namespace sluice::cli {
namespace {

using Clock = std::chrono::steady_clock;

// The help, around the settings that settings_help() lists from their table.
constexpr const char* kHelpHead =
    "usage: sluice run PIPELINE.lua [options]\n"
    "\n"
    "Runs the pipeline a Lua script describes through real worker processes and\n"
    "discards the batches, reporting progress, throughput and where the time went.\n"
    "\n"
    "settings (they override what the script says; the same names, '-' or '_', in\n"
    "pipeline.lua for some, the C API's \"name=value\" and Python's keywords):\n";

constexpr const char* kHelpTail =
    "\n"
    "options:\n"
    "  --batches N     stop after N batches in all (0 = no limit)\n"
    "  --interval S    seconds between progress reports (default: 0.25 on a terminal,\n"
    "                  5 otherwise)\n"
    "  --quiet         no progress reports, only the summary\n"
    "  --skip-log FILE one JSON line per skipped sample: {\"sample\": ID, \"reason\":\n"
    "                  \"...\"} (the reason names the file or record, and the epoch\n"
    "                  when a map failed; the epoch is not a key), appended and\n"
    "                  flushed as the run finds them (after each batch)\n"
    "\n"
    "reproducibility and distribution:\n"
    "  --record FILE   write a run record (JSON lines: per batch its sample ids and a\n"
    "                  digest of each field); compare two with `sluice verify`\n"
    "  --state FILE    where to save the loader state when the run stops early: on\n"
    "                  Ctrl-C, SIGTERM or at --batches (default sluice-state.json,\n"
    "                  or sluice-state.rank{rank}.json when the world size is above\n"
    "                  1, so that ranks sharing a directory never collide)\n"
    "                  ({rank} in FILE paths becomes the rank). A fresh run writes\n"
    "                  its start there at once (a run killed -9 leaves that, never\n"
    "                  an earlier run's state, which is kept as FILE.previous) and\n"
    "                  removes it when it ends whole; so does a run resumed from it\n"
    "  --resume FILE   continue a run from a saved state: the same batches the\n"
    "                  interrupted run would have delivered next. A glob (quoted:\n"
    "                  'sluice-state.rank*.json') or a directory (its *.json) names\n"
    "                  the states of every rank of a distributed run: they are merged\n"
    "                  into the run's global position, which resumes on any world\n"
    "                  size with the same global batch (from the slowest rank's step;\n"
    "                  the note says how many batches the faster ranks see again)\n"
    "  --trace FILE    write a Chrome trace of the run (Perfetto, chrome://tracing):\n"
    "                  a track per worker with its fills (each worker's last 4096),\n"
    "                  the consumer's waits, restarts, skips and the slots in use,\n"
    "                  and remote sources' downloads before time 0\n"
    "                  ({rank} in FILE becomes the rank)\n"
    "  -h, --help      show this help\n"
    "\n"
    "Progress goes to stderr: a live line on a terminal, plain lines otherwise. The\n"
    "summary goes to stdout. Exit status: 0 when every batch was delivered, 1 when\n"
    "the pipeline failed (its message names the script line), 2 on a usage error,\n"
    "130 after Ctrl-C and 143 after SIGTERM, also during start-up and when the\n"
    "signal goes to the whole process group (the state is saved first, at the\n"
    "start position if no batch was delivered, and the run record is complete;\n"
    "every worker is stopped before exit).\n";

const std::string& help_text() {
  static const std::string text = kHelpHead + settings_help() + kHelpTail;
  return text;
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

// "{rank}" in a path becomes the rank, so that the ranks of a distributed run
// write files of their own.
std::string with_rank(std::string path, const std::string& rank) {
  for (std::size_t at; (at = path.find("{rank}")) != std::string::npos;) path.replace(at, 6, rank);
  return path;
}
std::string for_rank(const std::string& path, std::uint32_t rank) { return with_rank(path, std::to_string(rank)); }

LoaderState read_state(const std::string& path) {
  const std::string text = read_text_file(path);  // its errors name the file already
  try {
    return LoaderState::from_json(text);
  } catch (const Error& e) {
    throw Error(path + ": " + e.what());
  }
}

// The resume state, if --resume names one: one file (with {rank}: this
// rank's), or a glob or directory of every rank's states, merged. Returns
// the files read.
std::vector<std::string> configure_resume(Options& o, const RunArgs& args) {
  if (args.resume_path.empty()) return {};
  const std::string pattern = for_rank(args.resume_path, o.rank);
  const std::vector<std::string> paths = expand_paths(pattern, ".json");
  if (paths.size() == 1 && paths[0] == pattern) {
    o.resume = read_state(pattern);
    return paths;
  }
  std::vector<LoaderState> states;
  for (const std::string& path : paths) states.push_back(read_state(path));
  std::string note;
  try {
    o.resume = LoaderState::merge(states, &note);
  } catch (const Error& e) {
    throw Error("--resume " + args.resume_path + " (" + std::to_string(paths.size()) + " states): " + e.what());
  }
  if (o.rank == 0) std::fprintf(stderr, "note: --resume %s: %s\n", args.resume_path.c_str(), note.c_str());
  return paths;
}

// Whether this rank's state file is one of the files the run resumed from
// (an earlier position of this run, not another run's state).
bool resumed_from_state_file(const std::string& state_path, const std::vector<std::string>& resumed_from) {
  std::error_code error;
  for (const std::string& path : resumed_from)
    if (std::filesystem::equivalent(path, state_path, error)) return true;
  return false;
}

// `s` as a JSON string.
std::string json_quote(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char u[8];
      std::snprintf(u, sizeof u, "\\u%04x", static_cast<unsigned>(c));
      out += u;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// The load's downloads as complete events on tracks "download N" of the
// loader's process, before its time 0 (`origin`, steady_clock ns taken as the
// Loader was made); downloads that overlap go to separate tracks.
std::string download_events(const std::vector<ScriptDownload>& downloads, std::uint64_t origin) {
  std::string out;
  std::vector<std::uint64_t> track_free;  // when each track's last span ends
  for (const ScriptDownload& d : downloads) {
    std::size_t track = 0;
    while (track < track_free.size() && track_free[track] > d.start_ns) ++track;
    if (track == track_free.size()) {
      track_free.push_back(0);
      out += ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":" + std::to_string(1000 + track) +
             ",\"args\":{\"name\":\"download " + std::to_string(track) + "\"}}";
    }
    track_free[track] = d.end_ns;
    const double ts = (static_cast<double>(d.start_ns) - static_cast<double>(origin)) / 1e3;
    const double dur = static_cast<double>(d.end_ns - d.start_ns) / 1e3;
    char times[96];
    std::snprintf(times, sizeof times, "\"ts\":%.3f,\"dur\":%.3f", ts, dur);
    out += ",\n{\"name\":\"download\",\"ph\":\"X\",\"pid\":1,\"tid\":" + std::to_string(1000 + track) + "," +
           times + ",\"args\":{\"url\":" + json_quote(d.url) + ",\"bytes\":" + std::to_string(d.bytes) + "}}";
  }
  return out;
}

// Writes the --trace file, with the load's downloads, and says where.
void write_trace(const Loader& loader, const std::string& path, const Script& script, std::uint64_t origin) {
  std::string json = loader.trace_json();
  const std::size_t end = json.rfind("\n]}");
  const ScriptRemoteStats remote = script.remote_stats();  // the workers' downloads too
  if (!remote.downloads.empty() && end != std::string::npos) json.insert(end, download_events(remote.downloads, origin));
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << json;
  if (!out.flush()) throw Error(path + ": cannot write the trace: " + std::strerror(errno));
  std::fprintf(stderr, "sluice run: trace written to %s (open it in https://ui.perfetto.dev or chrome://tracing)\n",
               path.c_str());
}

// Printed after a run's error message: where its state was saved.
std::string g_after_error;

// Every rank's state file: the template, {rank} where a rank's number goes.
std::string state_template_of(const RunArgs& args, const Options& o) {
  return args.state_path.empty() ? default_state_path(o.world_size) : args.state_path;
}

// This rank's state file.
std::string state_path_of(const RunArgs& args, const Options& o) { return for_rank(state_template_of(args, o), o.rank); }

// A fresh run's state file holds the run's start from its start on, so that
// a rank killed before it could save (kill -9, the OOM killer) leaves this
// run's start, never a state of an earlier run: merged with the other
// ranks', that one resumed past batches this run never delivered. An
// earlier run's file there is kept as FILE.previous (a fresh run that was
// meant to be a --resume loses nothing); the file is removed when the run
// ends whole. (A resumed run's file is an earlier position of the same run,
// which resumes safely: it is left as it is until the run stops, and
// removed when it ends whole.)
void claim_state_file(const RunArgs& args, const Options& o, const LoaderState& start) {
  const std::string path = state_path_of(args, o);
  struct stat st{};
  if (::stat(path.c_str(), &st) == 0) {
    if (::rename(path.c_str(), (path + ".previous").c_str()) != 0)
      throw Error("cannot keep the earlier run's state " + path + " as " + path + ".previous: " + std::strerror(errno));
    std::fprintf(stderr, "note: %s held an earlier run's state, kept as %s.previous (this run saves its own there)\n",
                 path.c_str(), path.c_str());
  }
  sluice::io::write_file_atomically(path, start.to_json() + "\n");
}

// Writes the state for --resume; returns the line that says where.
std::string save_state(const RunArgs& args, const Options& o, const LoaderState& state, int signal,
                       std::uint64_t delivered, const char* reason = nullptr) {
  const std::string path_template = state_template_of(args, o);
  const std::string state_path = for_rank(path_template, o.rank);
  sluice::io::write_file_atomically(state_path, state.to_json() + "\n");
  std::string resume = state_path;
  if (o.world_size > 1 && path_template.find("{rank}") != std::string::npos) {
    // Every rank's state together resumes on any world size (same global batch).
    resume = "'" + with_rank(path_template, "*") + "' (every rank's state: any world size with the same global batch)";
  }
  return std::string("sluice run: stopped ") +
         (reason                ? reason
          : signal == SIGINT  ? "by SIGINT"
          : signal == SIGTERM ? "by SIGTERM"
                              : "at --batches") +
         " after " + std::to_string(delivered) + (delivered == 1 ? " batch" : " batches") + "; state saved to " +
         state_path + " (continue with --resume " + resume + ")\n";
}

int run(const RunArgs& args) {
  const auto started = Clock::now();
  std::string launcher;
  Script script = args.settings.load(&launcher);
  for (const std::string& note : script.notes) std::fprintf(stderr, "note: %s\n", note.c_str());
  const std::vector<std::string> resumed_from = configure_resume(script.options, args);
  script.options.trace = !args.trace_path.empty();
  const Options& o = script.options;

  std::optional<RunRecorder> recorder;
  if (!args.record_path.empty()) {
    recorder.emplace(for_rank(args.record_path, o.rank), record_header(script));
  }

  SkipReport skips(args.skip_log_path, recorder ? &*recorder : nullptr);
  if (const int signal = signal_received()) {
    // Stopped while the script loaded: no Loader to start and stop, the
    // state is where the run would have begun.
    stop_startup_watch();
    if (recorder) recorder->close();
    std::fputs(save_state(args, o, LoaderState::start_of(o), signal, 0).c_str(), stderr);
    return 128 + signal;
  }
  const auto loader_made = static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
  Loader loader(script.options);
  SignalScope signals(loader);
  bool claimed = false;
  try {
    if (!o.resume) claim_state_file(args, o, loader.state());
    claimed = !o.resume;
  } catch (const Error& e) {  // a read-only directory: the run goes on, as it did before it saved anything
    std::fprintf(stderr, "note: %s; a state is saved only if the run stops early\n", e.what());
  }
  const std::uint64_t per_epoch = loader.plan().batches_per_epoch();
  std::uint64_t total = o.epochs == 0 ? 0 : per_epoch * o.epochs;
  if (args.batches > 0) total = total == 0 ? args.batches : std::min(total, args.batches);

  Progress progress(args, total, o.epochs);
  const auto loop_start = Clock::now();
  std::uint64_t delivered = 0;
  // A batch whose record line failed (a full disk) is not delivered: the state
  // saved is the one before it, so a resumed run records it (and those after).
  std::optional<LoaderState> unrecorded;
  try {
    while (args.batches == 0 || delivered < args.batches) {
      LoaderState before;
      if (recorder) before = loader.state();
      std::optional<Batch> batch = loader.next();
      if (!batch) break;
      if (recorder) {
        try {
          recorder->record(*batch);
        } catch (const Error&) {
          unrecorded = std::move(before);
          throw;
        }
      }
      batch->release();
      ++delivered;
      const Stats stats = loader.stats();
      skips.update(stats);
      progress.update(stats, loader.current_epoch());
    }
  } catch (const Error&) {
    skips.update(loader.stats());  // what was skipped before the failure
    // The batches delivered so far stay delivered: a rerun with --resume
    // continues after them (a remote store down mid-run, reusing the cache).
    try {
      if (recorder && !unrecorded) recorder->close();
      g_after_error = save_state(args, o, unrecorded ? *unrecorded : loader.state(), 0, delivered, "by the error above");
    } catch (const Error& e) {
      g_after_error = std::string("sluice run: no state saved: ") + e.what() + "\n";
    }
    if (!args.trace_path.empty()) write_trace(loader, for_rank(args.trace_path, o.rank), script, loader_made);  // up to the failure
    throw;
  }
  if (!args.trace_path.empty()) write_trace(loader, for_rank(args.trace_path, o.rank), script, loader_made);
  const auto loop_end = Clock::now();
  progress.finish();
  skips.update(loader.stats());
  if (recorder) recorder->close();
  const int signal = signal_received();
  const bool stopped_early = signal != 0 || (args.batches > 0 && delivered == args.batches &&
                                             loader.current_epoch() < o.epochs);
  if (stopped_early) std::fputs(save_state(args, o, loader.state(), signal, delivered).c_str(), stderr);
  // The run ended whole: nothing to resume. A resumed run's own state file
  // goes too (resumed again, it made the run's end once more).
  else if (claimed || resumed_from_state_file(state_path_of(args, o), resumed_from))
    ::unlink(state_path_of(args, o).c_str());

  const Stats stats = loader.stats();
  const ScriptWorkerTimes times = script.worker_times();
  const double wall = std::chrono::duration<double>(loop_end - loop_start).count();
  const double setup = std::chrono::duration<double>(loop_start - started).count();
  // Auto workers: the count the tuner settled on (the busy share is then
  // approximate: fewer workers ran at the start).
  const std::uint32_t workers = stats.workers;
  const double worker_span = std::max(1e-9, wall * workers);
  const double busy = std::min(1.0, seconds(stats.worker_fill_ns) / worker_span);
  const double waited = std::min(1.0, seconds(stats.consumer_wait_ns) / std::max(wall, 1e-9));
  const char* order = o.ordered ? "ordered" : "unordered";
  const std::uint32_t slots = loader.slots();
  const RunMeasures measures{wall, stats.batches_delivered, workers, slots, o.slots != 0, usable_cores(),
                             stats.worker_fill_ns, stats.worker_cpu_ns, stats.worker_runqueue_ns,
                             stats.consumer_wait_ns, stats.slots_full_ns, script.remote.wait_ns,
                             script.remote.bytes, script.remote.misses, script.remote.revalidated,
                             !stats.autotune.empty()};

  std::printf("pipeline    %s: %llu samples, batch %u%s, %u worker%s%s, prefetch %u, %s, %s\n",
              script.path.c_str(), static_cast<unsigned long long>(o.dataset_size), o.batch_size,
              o.drop_last ? " (drop_last)" : "", workers, workers == 1 ? "" : "s",
              o.max_workers > o.workers ? " (auto)" : "", slots, order, script.device.c_str());
  if (!stats.autotune.empty()) std::printf("auto        %s\n", stats.autotune.c_str());
  if (const ScriptRemoteStats r = script.remote_stats(); r.objects > 0) {
    std::printf("remote      %llu objects: %llu from the node cache, %llu downloaded (%.1f MB, %llu requests, "
                "%llu retries, %llu evictions), %llu revalidated (%llu changed), %.2f s of the start-up waiting on "
                "the network",
                static_cast<unsigned long long>(r.objects), static_cast<unsigned long long>(r.hits),
                static_cast<unsigned long long>(r.misses), static_cast<double>(r.bytes) / 1e6,
                static_cast<unsigned long long>(r.requests), static_cast<unsigned long long>(r.retries),
                static_cast<unsigned long long>(r.evictions), static_cast<unsigned long long>(r.revalidated),
                static_cast<unsigned long long>(r.changed), seconds(script.remote.wait_ns));
    if (r.worker_shards > 0) {
      std::printf(", %.2f s of the workers' reads waiting for shards", seconds(r.worker_wait_ns));
      if (r.cache_limit > 0)
        std::printf(" (cache_limit_mb passed by at most %.1f MB)", static_cast<double>(r.over_budget) / 1e6);
    }
    std::printf("\n");
  }
  if (o.world_size > 1) {
    std::printf("shard       rank %u of %u (%s)\n", o.rank, o.world_size,
                args.settings.sets_shard() ? "--rank/--world-size" : launcher.c_str());
  }
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
              busy * 100, seconds(stats.worker_fill_ns), workers, wall, seconds(times.start_ns),
              (1.0 - busy) * 100);
  if (stats.worker_fill_ns > 0) {
    const double fill = seconds(stats.worker_fill_ns);
    const double on_cpu = std::min(1.0, seconds(stats.worker_cpu_ns) / fill);
    const double runqueue = std::min(1.0 - on_cpu, seconds(stats.worker_runqueue_ns) / fill);
    std::printf("            of that, %.0f%% on a CPU (%.2f s, %.1f of %u cores), %.0f%% waiting for a CPU, "
                "%.0f%% off-CPU (I/O, sleeps)\n",
                on_cpu * 100, seconds(stats.worker_cpu_ns), seconds(stats.worker_cpu_ns) / std::max(wall, 1e-9),
                measures.cores, runqueue * 100, (1.0 - on_cpu - runqueue) * 100);
  }
  std::printf("consumer    waited %.2f s for batches (%.0f%% of the run, %llu of %llu next() calls blocked), "
              "at most %u slots in flight\n",
              seconds(stats.consumer_wait_ns), waited * 100,
              static_cast<unsigned long long>(stats.consumer_waits),
              static_cast<unsigned long long>(stats.batches_delivered), stats.max_in_flight);
  if (stats.worker_restarts > 0) {
    std::printf("faults      %u worker restart%s, %llu batch%s filled again\n", stats.worker_restarts,
                stats.worker_restarts == 1 ? "" : "s", static_cast<unsigned long long>(stats.batches_retried),
                stats.batches_retried == 1 ? "" : "es");
  }
  if (o.on_error == OnError::skip || !stats.skipped_samples.empty()) {
    std::printf("skipped     %s\n", describe_skipped(stats, !args.skip_log_path.empty()).c_str());
  }
  if (stats.empty_batches > 0) {
    std::printf("            %llu batch%s left empty by skipped samples, not delivered\n",
                static_cast<unsigned long long>(stats.empty_batches), stats.empty_batches == 1 ? "" : "es");
  }
  for (const std::string& warning : run_warnings(measures)) std::printf("warning     %s\n", warning.c_str());
  std::printf("verdict     %s\n", verdict(measures).c_str());
  return signal != 0 ? 128 + signal : 0;
}

}  // namespace

int run_command(int argc, char** argv) {
  RunArgs args;
  try {
    args = parse_run_args(argc, argv);
  } catch (const UsageError& e) {
    std::fprintf(stderr, "sluice run: %s\n", e.message.c_str());
    return 2;
  }
  if (args.help) {
    std::fputs(help_text().c_str(), stdout);
    return 0;
  }
  try {
    return run(args);
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "sluice run: error: %s\n%s", e.what(), g_after_error.c_str());
    return 1;
  }
}

}  // namespace sluice::cli
