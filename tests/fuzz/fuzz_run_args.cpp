// Fuzzes the command line of `sluice run`: the input, split at NUL bytes, is
// argv. Parsing either succeeds or throws UsageError; nothing else.
#include <cstdint>
#include <string>
#include <vector>

#include "run_args.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<std::string> words{"run"};
  std::string current;
  for (std::size_t i = 0; i < size; ++i) {
    if (data[i] == 0) {
      words.push_back(current);
      current.clear();
    } else {
      current += static_cast<char>(data[i]);
    }
  }
  words.push_back(current);
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  try {
    sluice::cli::parse_run_args(static_cast<int>(argv.size()), argv.data());
  } catch (const sluice::cli::UsageError&) {
  }
  return 0;
}
