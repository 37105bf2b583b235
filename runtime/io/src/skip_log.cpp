#include "sluice/io/skip_log.h"

namespace sluice::io {

std::string SkipLog::report(std::size_t max_lines) const {
  std::string s = "skipped " + std::to_string(entries_.size()) +
                  (entries_.size() == 1 ? " sample" : " samples");
  if (entries_.empty()) return s;
  s += ": ids";
  for (std::size_t i = 0; i < entries_.size(); ++i)
    s += (i ? ", " : " ") + std::to_string(entries_[i].id);
  for (std::size_t i = 0; i < entries_.size() && i < max_lines; ++i)
    s += "\n  " + std::to_string(entries_[i].id) + ": " + entries_[i].reason;
  if (entries_.size() > max_lines)
    s += "\n  ... " + std::to_string(entries_.size() - max_lines) + " more";
  return s;
}

}  // namespace sluice::io
