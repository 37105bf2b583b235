#include "skipped_text.h"

namespace sluice::cli {

namespace {

// The first line of a skip reason (a map's traceback follows it), at most
// 200 bytes.
std::string first_line(const std::string& reason) {
  constexpr std::size_t kMax = 200;
  std::string line = reason.substr(0, reason.find('\n'));
  if (line.size() > kMax) line = line.substr(0, kMax) + "...";
  return line;
}

}  // namespace

std::string describe_skipped(const Stats& stats, bool logged) {
  constexpr std::size_t kShown = 50, kReasons = 5;
  const std::vector<std::uint64_t>& ids = stats.skipped_samples;
  std::string text = std::to_string(ids.size()) + (ids.size() == 1 ? " sample" : " samples") +
                     " (on_error = \"skip\")";
  if (ids.empty()) return text;
  text += ": ids ";
  for (std::size_t i = 0; i < ids.size() && i < kShown; ++i) text += (i ? ", " : "") + std::to_string(ids[i]);
  if (ids.size() > kShown) text += ", ... and " + std::to_string(ids.size() - kShown) + " more";
  for (std::size_t i = 0; i < ids.size() && i < stats.skip_reasons.size() && i < kReasons; ++i) {
    text += "\n            sample " + std::to_string(ids[i]) + ": " + first_line(stats.skip_reasons[i]);
  }
  if (ids.size() > kReasons) {
    text += "\n            ... " + std::to_string(ids.size() - kReasons) + " more" +
            (logged ? " in the skip log" : " (--skip-log FILE lists every one)");
  }
  return text;
}

}  // namespace sluice::cli
