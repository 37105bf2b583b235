// `sluice peek`: the first batches of a pipeline, for a person to look at
// before training on it.
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "commands.h"
#include "contact_sheet.h"
#include "field_values.h"
#include "run_args.h"
#include "skipped_text.h"
#include "sluice/error.h"
#include "sluice/loader.h"
#include "sluice/script.h"

namespace sluice::cli {
namespace {

constexpr const char* kHelp =
    "usage: sluice peek PIPELINE.lua [--batches N] [--png DIR] [settings]\n"
    "\n"
    "Runs a pipeline through real workers for its first batches and shows them,\n"
    "without training: per batch, each field's dtype, shape, min, max, mean and\n"
    "standard deviation, then each sample with its file (where the source knows\n"
    "it) and, for a field that holds sluice.folders' labels, the class names.\n"
    "\n"
    "options:\n"
    "  --batches N     batches to show (default 1)\n"
    "  --png DIR       also write each image field (each sample [H, W, C] or\n"
    "                  [C, H, W] with 1 or 3 channels) as a contact sheet,\n"
    "                  DIR/FIELD.png, of the shown batches' samples (at most 256);\n"
    "                  other dtypes than uint8 are scaled from their [min, max]\n"
    "  -h, --help      show this help\n"
    "\n"
    "settings (override the script, as for sluice run): -e/--epochs, -w/--workers,\n"
    "-p/--prefetch, -b/--batch-size, --seed, --shuffle/--no-shuffle,\n"
    "--drop-last/--no-drop-last, --ordered/--no-ordered, --on-error, ... (sluice run --help)\n"
    "\n"
    "Exit status: 0, 1 when the pipeline failed (its message names the script line),\n"
    "2 on a usage error.\n";

constexpr std::string_view kValueOptions[] = {"--batches", "--png"};

struct PeekArgs {
  RunSettings settings;
  bool help = false;
  std::uint64_t batches = 1;
  std::string png_dir;
};

PeekArgs parse(int argc, char** argv) {
  SettingsLine line = parse_settings_line(argc, argv, "peek", {kValueOptions, {}});
  PeekArgs args;
  args.settings = std::move(line.settings);
  args.help = line.help;
  for (const auto& [name, value] : line.own) {
    if (name == "--batches") {
      args.batches = parse_count(name, value, 1'000'000);
      if (args.batches == 0) throw UsageError{"--batches expects at least 1"};
    } else if (name == "--png") {
      if (value.empty()) throw UsageError{"--png needs a directory"};
      args.png_dir = value;
    }
  }
  return args;
}

std::string shape_text(const FieldView& field) {
  std::string text = "[";
  for (std::size_t d = 0; d < field.shape.size(); ++d) text += (d ? ", " : "") + std::to_string(field.shape[d]);
  return text + "]";
}

// Whether a field holds each sample's sluice.folders label: one integer per
// sample, equal to the label of the sample's file.
bool holds_labels(const Script& script, const Batch& batch, const FieldView& field) {
  if (script.classes().empty() || !integral(field.dtype) || field.shape.size() != 1) return false;
  const auto ids = batch.sample_ids();
  if (element_count(field) != ids.size()) return false;
  for (std::size_t s = 0; s < ids.size(); ++s) {
    if (element(field, s) != static_cast<double>(script.sample_label(ids[s]))) return false;
  }
  return true;
}

void print_batch(const Script& script, const Batch& batch) {
  std::printf("\nbatch %llu of epoch %llu: %zu samples\n", static_cast<unsigned long long>(batch.index()),
              static_cast<unsigned long long>(batch.epoch()), batch.size());
  std::printf("  %-14s %-8s %-18s %12s %12s %12s %12s\n", "field", "dtype", "shape", "min", "max", "mean", "std");
  std::vector<std::size_t> label_fields;
  for (std::size_t f = 0; f < batch.field_count(); ++f) {
    const FieldView field = batch.field(f);
    Summary summary;
    const std::size_t n = element_count(field);
    for (std::size_t i = 0; i < n; ++i) summary.add(element(field, i));
    const bool labels = holds_labels(script, batch, field);
    if (labels) label_fields.push_back(f);
    std::printf("  %-14s %-8s %-18s %12.6g %12.6g %12.6g %12.6g%s\n", std::string(field.name).c_str(),
                std::string(dtype_name(field.dtype)).c_str(), shape_text(field).c_str(), summary.min(),
                summary.max(), summary.mean(), summary.std(), labels ? "  (sluice.folders labels)" : "");
  }

  const auto ids = batch.sample_ids();
  const bool files = !ids.empty() && !script.sample_file(ids[0]).empty();
  if (!files && label_fields.empty()) {
    std::string list;
    for (std::size_t s = 0; s < ids.size(); ++s) list += (s ? ", " : "") + std::to_string(ids[s]);
    std::printf("  samples  %s\n", list.c_str());
    return;
  }
  const std::vector<std::string> classes = script.classes();
  std::printf("  %-10s", "sample");
  for (std::size_t f : label_fields) std::printf(" %-20s", std::string(batch.field(f).name).c_str());
  std::printf("%s\n", files ? " file" : "");
  for (std::size_t s = 0; s < ids.size(); ++s) {
    std::printf("  %-10llu", static_cast<unsigned long long>(ids[s]));
    for (std::size_t f : label_fields) {
      const auto label = static_cast<std::size_t>(element(batch.field(f), s));
      const std::string text = std::to_string(label) + " " + classes.at(label);
      std::printf(" %-20s", text.c_str());
    }
    std::printf("%s%s\n", files ? " " : "", files ? script.sample_file(ids[s]).c_str() : "");
  }
}

int peek(const PeekArgs& args) {
  Script script = args.settings.load();
  for (const std::string& note : script.notes) std::fprintf(stderr, "note: %s\n", note.c_str());
  const Options& o = script.options;
  std::printf("pipeline    %s: %llu samples, batch %u, %u worker%s\n", script.path.c_str(),
              static_cast<unsigned long long>(o.dataset_size), o.batch_size, o.workers, o.workers == 1 ? "" : "s");
  const std::vector<std::string> classes = script.classes();
  if (!classes.empty()) {
    std::string names;
    for (std::size_t c = 0; c < classes.size(); ++c) {
      if (c == 20) {
        names += ", ... and " + std::to_string(classes.size() - c) + " more";
        break;
      }
      names += (c ? ", " : "") + classes[c];
    }
    std::printf("classes     %zu (sluice.folders): %s\n", classes.size(), names.c_str());
  }

  std::map<std::string, ContactSheet> sheets;  // by field name, in name order
  Loader loader(script.options);
  std::uint64_t shown = 0;
  while (shown < args.batches) {
    std::optional<Batch> batch = loader.next();
    if (!batch) break;
    print_batch(script, *batch);
    ++shown;
    if (args.png_dir.empty()) continue;
    for (std::size_t f = 0; f < batch->field_count(); ++f) {
      const FieldView field = batch->field(f);
      if (const std::optional<ImageLayout> layout = image_layout(field)) {
        sheets.try_emplace(std::string(field.name), *layout, field.dtype).first->second.add(field);
      }
    }
  }
  if (shown < args.batches) std::printf("\nthe pipeline ended after %llu batches\n", static_cast<unsigned long long>(shown));
  if (const Stats stats = loader.stats(); !stats.skipped_samples.empty()) {
    std::printf("\nskipped     %s\n", describe_skipped(stats, false).c_str());
  }

  if (!args.png_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(args.png_dir, ec);
    if (ec) throw Error(args.png_dir + ": cannot create: " + ec.message());
    if (sheets.empty()) std::printf("\ncontact sheets: no field is an image ([H, W, C] or [C, H, W], C = 1 or 3)\n");
    for (const auto& [name, sheet] : sheets) {
      const std::string path = (std::filesystem::path(args.png_dir) / (name + ".png")).string();
      const std::string what = sheet.write(path);
      std::printf("\ncontact sheet %s: %s, %s\n", name.c_str(), path.c_str(), what.c_str());
    }
  }
  return 0;
}

}  // namespace

int peek_command(int argc, char** argv) {
  PeekArgs args;
  try {
    args = parse(argc, argv);
  } catch (const UsageError& e) {
    std::fprintf(stderr, "sluice peek: %s\n", e.message.c_str());
    return 2;
  }
  if (args.help) {
    std::fputs(kHelp, stdout);
    return 0;
  }
  try {
    return peek(args);
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "sluice peek: error: %s\n", e.what());
    return 1;
  }
}

}  // namespace sluice::cli
