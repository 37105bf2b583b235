#include "run_args.h"

#include <charconv>
#include <exception>
#include <string_view>

#include "sluice/error.h"

namespace sluice::cli {

namespace {

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

}  // namespace

std::string default_state_path(std::uint32_t world_size) {
  return world_size > 1 ? "sluice-state.rank{rank}.json" : "sluice-state.json";
}

RunArgs parse_run_args(int argc, char** argv) {
  RunArgs args;
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
      if (!args.settings.path().empty()) {
        throw UsageError{"one pipeline script at a time (got '" + args.settings.path() + "' and '" +
                         std::string(arg) + "')"};
      }
      args.settings.set_path(std::string(arg));
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
    if (RunSettings::known(name)) {
      try {
        args.settings.set(name, value);
      } catch (const Error& e) {
        throw UsageError{e.what()};
      }
    } else if (name == "--batches") {
      args.batches = parse_count(name, value, UINT64_MAX);
    } else if (name == "--interval") {
      args.interval_s = parse_seconds(name, value);
    } else if (name == "--skip-log") {
      args.skip_log_path = std::string(value);
    } else if (name == "--record") {
      args.record_path = std::string(value);
    } else if (name == "--state") {
      args.state_path = std::string(value);
    } else if (name == "--resume") {
      args.resume_path = std::string(value);
    } else {
      throw UsageError{"unknown option " + std::string(name) + " (see sluice run --help)"};
    }
  }
  if (!args.help && args.settings.path().empty()) throw UsageError{"which pipeline? (sluice run PIPELINE.lua)"};
  return args;
}


}  // namespace sluice::cli
