#include "run_args.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <exception>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sluice/error.h"
#include "sluice/settings.h"

namespace sluice::cli {

std::uint64_t parse_count(std::string_view option, std::string_view text, std::uint64_t max) {
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value > max) {
    throw UsageError{std::string(option) + " expects an integer in [0, " + std::to_string(max) +
                     "], got '" + std::string(text) + "'"};
  }
  return value;
}

namespace {

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

// Levenshtein distance, for suggesting the option a typo meant.
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// Options of `sluice run` that are not run settings.
constexpr std::string_view kRunValueOptions[] = {"--batches", "--interval", "--skip-log", "--record",
                                                 "--state",   "--resume",   "--trace"};
constexpr std::string_view kRunFlags[] = {"--quiet"};

bool listed(std::span<const std::string_view> names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}
// Short forms of the common options.
constexpr std::pair<char, std::string_view> kShort[] = {
    {'w', "--workers"}, {'e', "--epochs"}, {'b', "--batch-size"}, {'p', "--prefetch"}};

// Every long option, as typed: --help, --own ones, each setting with dashes, --no-FLAG.
std::vector<std::string> long_options(const OwnOptions& own) {
  std::vector<std::string> all{"--help"};
  all.insert(all.end(), own.with_value.begin(), own.with_value.end());
  all.insert(all.end(), own.flags.begin(), own.flags.end());
  for (std::string name : RunSettings::names()) {
    std::replace(name.begin(), name.end(), '_', '-');
    all.push_back("--" + name);
    if (RunSettings::is_flag(name)) all.push_back("--no-" + name);
  }
  return all;
}

[[noreturn]] void unknown_option(std::string_view name, std::string_view command, const OwnOptions& own) {
  std::string best;
  std::size_t best_distance = SIZE_MAX;
  for (const std::string& option : long_options(own)) {
    const std::size_t d = edit_distance(name, option);
    if (d < best_distance) best_distance = d, best = option;
  }
  std::string message = "unknown option " + std::string(name);
  // At most a third of the name wrong: "--worker" and "--wrokers" are
  // --workers, "--foo" is nothing.
  if (best_distance <= std::max<std::size_t>(2, name.size() / 3)) message += "; did you mean " + best + "?";
  throw UsageError{message + " (see sluice " + std::string(command) + " --help)"};
}

// "-w 2", "-w2" or "-w=2" as "--workers" and its value (advancing i past a
// separate value).
std::pair<std::string_view, std::string_view> short_option(std::string_view arg, int& i, int argc, char** argv) {
  for (const auto& [letter, name] : kShort) {
    if (arg[1] != letter) continue;
    std::string_view value = arg.substr(2);
    if (value.starts_with("=")) value.remove_prefix(1);
    if (value.empty()) {
      if (i + 1 >= argc) throw UsageError{std::string(arg) + " (" + std::string(name) + ") needs a value"};
      value = argv[++i];
    }
    return {name, value};
  }
  std::string known;
  for (const auto& [letter, name] : kShort) {
    known += std::string(known.empty() ? "" : ", ") + "-" + letter + " (" + std::string(name) + ")";
  }
  throw UsageError{"unknown option " + std::string(arg) + "; the short options are " + known + ", -h (--help)"};
}

}  // namespace

std::string settings_help() {
  constexpr std::size_t kWidth = 80, kIndent = 30;
  std::string out;
  for (const Setting& setting : settings()) {
    std::string option = "--" + setting.name;
    std::replace(option.begin(), option.end(), '_', '-');
    std::string left = "  ";
    for (const auto& [letter, name] : kShort) {
      if (name == option) left += std::string("-") + letter + ", ";
    }
    if (setting.kind == SettingKind::flag) {
      left += option + ", --no-" + option.substr(2);
    } else if (setting.kind == SettingKind::choice) {
      std::string choices = setting.takes;  // "a or b" as a|b
      for (std::string_view sep : {", ", " or "}) {
        for (std::size_t at; (at = choices.find(sep)) != std::string::npos;) choices.replace(at, sep.size(), "|");
      }
      left += option + " " + choices;
    } else if (setting.kind == SettingKind::path) {
      left += option + " DIR";
    } else {
      left += option + (setting.takes.ends_with(" or auto") ? " N|auto" : " N");
    }
    std::string help = setting.help;
    if (!setting.default_value.empty()) help += " (default " + setting.default_value + ")";
    // The option, then the help's words filled to kWidth, continued at kIndent.
    std::string line = left;
    if (line.size() + 2 > kIndent) {
      out += line + "\n";
      line.clear();
    }
    line.resize(kIndent, ' ');
    bool first = true;
    std::size_t at = 0;
    while (at < help.size()) {
      std::size_t end = help.find(' ', at);
      if (end == std::string::npos) end = help.size();
      const std::string word = help.substr(at, end - at);
      if (!first && line.size() + 1 + word.size() > kWidth) {
        out += line + "\n";
        line = std::string(kIndent, ' ') + word;
      } else {
        line += (first ? "" : " ") + word;
      }
      first = false;
      at = end + 1;
    }
    out += line + "\n";
  }
  return out;
}

std::string default_state_path(std::uint32_t world_size) {
  return world_size > 1 ? "sluice-state.rank{rank}.json" : "sluice-state.json";
}

SettingsLine parse_settings_line(int argc, char** argv, std::string_view command, const OwnOptions& own) {
  SettingsLine line;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      line.help = true;
      continue;
    }
    if (listed(own.flags, arg)) {
      line.own.emplace_back(arg, "");
      continue;
    }
    if (arg.size() >= 2 && arg[0] == '-' && arg[1] != '-') {
      const auto [name, value] = short_option(arg, i, argc, argv);
      try {
        line.settings.set(name, value);
      } catch (const Error& e) {
        throw UsageError{e.what()};
      }
      continue;
    }
    if (arg.size() < 2 || arg.substr(0, 2) != "--") {
      if (!line.settings.path().empty()) {
        throw UsageError{"one pipeline script at a time (got '" + line.settings.path() + "' and '" +
                         std::string(arg) + "')"};
      }
      line.settings.set_path(std::string(arg));
      continue;
    }
    std::string_view name = arg;
    std::string_view value;
    const auto eq = arg.find('=');
    if (eq != std::string_view::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
    }
    // --shuffle, --no-shuffle (and the old --shuffle true|false).
    if (eq == std::string_view::npos && name.starts_with("--no-") && RunSettings::is_flag(name.substr(5))) {
      line.settings.set(name.substr(5), "false");
      continue;
    }
    if (eq == std::string_view::npos && RunSettings::is_flag(name)) {
      const std::string_view next = i + 1 < argc ? std::string_view(argv[i + 1]) : std::string_view();
      const bool takes_next = next == "true" || next == "false" || next == "1" || next == "0";
      line.settings.set(name, takes_next ? next : "true");
      if (takes_next) ++i;
      continue;
    }
    if (!RunSettings::known(name) && !listed(own.with_value, name)) unknown_option(name, command, own);
    if (eq == std::string_view::npos) {
      if (i + 1 >= argc) throw UsageError{std::string(name) + " needs a value"};
      value = argv[++i];
    }
    if (RunSettings::known(name)) {
      try {
        line.settings.set(name, value);
      } catch (const Error& e) {
        throw UsageError{e.what()};
      }
    } else {
      line.own.emplace_back(name, value);
    }
  }
  if (!line.help && line.settings.path().empty()) {
    throw UsageError{"which pipeline? (sluice " + std::string(command) + " PIPELINE.lua)"};
  }
  return line;
}

RunArgs parse_run_args(int argc, char** argv) {
  SettingsLine line = parse_settings_line(argc, argv, "run", {kRunValueOptions, kRunFlags});
  RunArgs args;
  args.settings = std::move(line.settings);
  args.help = line.help;
  for (const auto& [name, value] : line.own) {
    if (name == "--quiet") {
      args.quiet = true;
    } else if (name == "--batches") {
      args.batches = parse_count(name, value, UINT64_MAX);
    } else if (name == "--interval") {
      args.interval_s = parse_seconds(name, value);
    } else if (name == "--skip-log") {
      args.skip_log_path = value;
    } else if (name == "--record") {
      args.record_path = value;
    } else if (name == "--state") {
      args.state_path = value;
    } else if (name == "--resume") {
      args.resume_path = value;
    } else if (name == "--trace") {
      args.trace_path = value;
    }
  }
  return args;
}

}  // namespace sluice::cli
