#include "bench.h"

#include <charconv>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

#include "handoff.h"
#include "harness.h"
#include "transport.h"

namespace sluice::bench {
namespace {

constexpr const char* kUsage = R"(usage: sluice bench <transport|handoff> [options]

cases:
  transport  workers produce 64 MiB float32 batches with no compute; the consumer
             reads one value per 4 KiB page. Reports delivered GB/s and its ratio
             to a single-thread memcpy measured in the same run (target >= 0.8).
  handoff    batches of 256 samples x 256 bytes from a trivial producer.
             Reports batches/s and samples/s (target >= 100000 batches/s).
Each case also runs PyTorch's DataLoader on the same work with the same number
of workers and prints the ratio sluice / pytorch. Figures are medians of the
runs; warmup batches are not timed.

options:
  --json         print one JSON object on stdout instead of a table
  --runs N       measured runs (default 5)
  --workers N    worker processes, for Sluice and PyTorch alike (default 2)
  --batches N    timed batches per Sluice run (default: transport 64, handoff 200000)
  --slots N      Sluice batch slots (default: transport 2 * workers + 2, handoff 128)
  --no-pytorch   skip the PyTorch baseline; its figures are reported as null
  --help         show this text

environment:
  SLUICE_BENCH_PYTHON  interpreter for the PyTorch baseline (default /usr/bin/python3);
                       without an importable torch the PyTorch figures are null
)";

// A positive integer no larger than max, or nullopt.
std::optional<std::uint64_t> parse_count(std::string_view text, std::uint64_t max) {
  std::uint64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value == 0 || value > max) return std::nullopt;
  return value;
}

int usage_error(const std::string& message) {
  std::fprintf(stderr, "sluice bench: %s\n\n%s", message.c_str(), kUsage);
  return 2;
}

}  // namespace

int bench_command(int argc, char** argv) {
  std::optional<std::string_view> case_name;
  CaseOptions options;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (arg == "--json") {
      options.json = true;
    } else if (arg == "--no-pytorch") {
      options.pytorch = false;
    } else if (arg == "--runs" || arg == "--workers" || arg == "--batches" || arg == "--slots") {
      if (i + 1 >= argc) return usage_error(std::string(arg) + " needs a value");
      const std::uint64_t max = arg == "--batches" ? std::uint64_t{1} << 40 : 4096;
      const std::optional<std::uint64_t> value = parse_count(argv[++i], max);
      if (!value) {
        return usage_error(std::string(arg) + " takes an integer from 1 to " + std::to_string(max) + ", not '" +
                           argv[i] + "'");
      }
      if (arg == "--runs") options.runs = static_cast<int>(*value);
      if (arg == "--workers") options.workers = static_cast<std::uint32_t>(*value);
      if (arg == "--batches") options.batches = *value;
      if (arg == "--slots") options.slots = static_cast<std::uint32_t>(*value);
    } else if (!arg.starts_with("-") && !case_name) {
      case_name = arg;
    } else {
      return usage_error("unexpected argument '" + std::string(arg) + "'");
    }
  }
  if (!case_name) return usage_error("which case: transport or handoff?");
  if (*case_name != "transport" && *case_name != "handoff") {
    return usage_error("unknown case '" + std::string(*case_name) + "'");
  }

  try {
    if (*case_name == "transport") {
      run_transport_case(options);
    } else {
      run_handoff_case(options);
    }
  } catch (const std::exception& error) {
    std::fprintf(stderr, "sluice bench %s: %s\n", std::string(*case_name).c_str(), error.what());
    return 1;
  }
  return 0;
}

}  // namespace sluice::bench
