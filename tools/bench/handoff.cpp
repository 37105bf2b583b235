#include "handoff.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "json.h"
#include "pytorch_baseline.h"
#include "sluice/loader.h"
#include "sluice/producer.h"

namespace sluice::bench {
namespace {

constexpr std::uint32_t kSamplesPerBatch = 256;
constexpr std::int64_t kSampleBytes = 256;
constexpr std::uint64_t kDefaultBatches = 200'000;
constexpr std::uint32_t kDefaultSlots = 128;
constexpr double kTargetBatchesPerSecond = 100'000;
// PyTorch hands batches over far slower; fewer batches keep its run short.
constexpr int kPyTorchWarmup = 50;
constexpr int kPyTorchBatches = 1000;

struct Run {
  double batches_per_s;
  double consumer_wait_fraction;  // share of the timed interval next() spent blocked
};

// Takes the next batch, checks its first sample carries its id, touches every page.
void consume(Loader& loader) {
  std::optional<Batch> batch = loader.next();
  if (!batch) throw std::runtime_error("the loader ended early");
  const FieldView field = batch->field(0);
  std::uint64_t first_id = 0;
  std::memcpy(&first_id, field.data, sizeof first_id);
  if (batch->size() != kSamplesPerBatch || field.nbytes != kSamplesPerBatch * kSampleBytes ||
      first_id != batch->sample_ids()[0]) {
    throw std::runtime_error("batch " + std::to_string(batch->index()) + " is not as produced");
  }
  keep(touch_pages(field.data, field.nbytes));
}

Run measure_once(const CaseOptions& options, std::uint32_t slots, std::uint64_t warmup) {
  Options loader_options;
  // `slots` batches more than are consumed keep the pipeline as full when the
  // clock stops as when it starts, so prefetched batches do not flatter the rate.
  loader_options.dataset_size = (warmup + options.batches + slots) * kSamplesPerBatch;
  loader_options.batch_size = kSamplesPerBatch;
  loader_options.fields = {{"x", DType::u8, {kSampleBytes}}};
  loader_options.producer = per_sample([](const SampleRef& sample) {
    std::memcpy(sample.data(0), &sample.index, sizeof sample.index);
  });
  loader_options.workers = options.workers;
  loader_options.slots = slots;
  Loader loader(std::move(loader_options));

  for (std::uint64_t i = 0; i < warmup; ++i) consume(loader);
  const Stats before = loader.stats();
  const Stopwatch clock;
  for (std::uint64_t i = 0; i < options.batches; ++i) consume(loader);
  const double seconds = clock.seconds();
  const Stats after = loader.stats();
  return {static_cast<double>(options.batches) / seconds,
          static_cast<double>(after.consumer_wait_ns - before.consumer_wait_ns) / 1e9 / seconds};
}

}  // namespace

void run_handoff_case(const CaseOptions& requested) {
  CaseOptions options = requested;
  if (options.batches == 0) options.batches = kDefaultBatches;
  const std::uint32_t slots = options.slots != 0 ? options.slots : kDefaultSlots;
  const std::uint64_t warmup = std::max<std::uint64_t>(1000, 4 * std::uint64_t{slots});

  std::vector<double> rates, waits;
  for (int run = 0; run < options.runs; ++run) {
    const Run result = measure_once(options, slots, warmup);
    rates.push_back(result.batches_per_s);
    waits.push_back(result.consumer_wait_fraction);
  }

  const PyTorchBaseline pytorch =
      options.pytorch
          ? run_pytorch_baseline({"handoff", "--runs", std::to_string(options.runs), "--workers",
                                  std::to_string(options.workers), "--warmup", std::to_string(kPyTorchWarmup),
                                  "--batches", std::to_string(kPyTorchBatches)})
          : pytorch_skipped("skipped (--no-pytorch)");

  const double batches_per_s = median(rates);
  const std::optional<double> pytorch_batches_per_s =
      pytorch.per_run ? std::optional(median(*pytorch.per_run)) : std::nullopt;
  const std::optional<double> pytorch_samples_per_s =
      pytorch_batches_per_s ? std::optional(*pytorch_batches_per_s * kSamplesPerBatch) : std::nullopt;
  const std::optional<double> ratio_vs_pytorch =
      pytorch_batches_per_s ? std::optional(batches_per_s / *pytorch_batches_per_s) : std::nullopt;

  const double first_touch = first_touch_us();
  if (options.json) {
    JsonObject per_run;
    per_run.numbers("batches_per_s", rates)
        .numbers("consumer_wait_fraction", waits)
        .numbers("pytorch_batches_per_s", pytorch.per_run);
    JsonObject out;
    out.string("case", "handoff")
        .integer("workers", options.workers)
        .integer("runs", options.runs)
        .integer("slots", slots)
        .integer("samples_per_batch", kSamplesPerBatch)
        .integer("sample_bytes", kSampleBytes)
        .integer("batches_per_run", static_cast<std::int64_t>(options.batches))
        .integer("warmup_batches", static_cast<std::int64_t>(warmup))
        .number("batches_per_s", batches_per_s)
        .number("samples_per_s", batches_per_s * kSamplesPerBatch)
        .number("us_per_batch", 1e6 / batches_per_s)
        .number("target_batches_per_s", kTargetBatchesPerSecond)
        .boolean("meets_target", batches_per_s >= kTargetBatchesPerSecond)
        .number("consumer_wait_fraction", median(waits))
        .number("pytorch_batches_per_s", pytorch_batches_per_s)
        .number("pytorch_samples_per_s", pytorch_samples_per_s)
        .number("ratio_vs_pytorch", ratio_vs_pytorch)
        .integer("pytorch_batches_per_run", kPyTorchBatches)
        .string_or_null("pytorch_note", pytorch.note)
        .number("first_touch_us", first_touch)
        .object("per_run", per_run);
    std::printf("%s\n", out.str().c_str());
    return;
  }

  std::printf("sluice bench handoff: %u workers, %u slots, %d runs x %llu batches of 256 x 256 B (medians)\n",
              options.workers, slots, options.runs, static_cast<unsigned long long>(options.batches));
  std::printf("  sluice              %10.0f batches/s  %12.0f samples/s  %.2f us/batch\n", batches_per_s,
              batches_per_s * kSamplesPerBatch, 1e6 / batches_per_s);
  std::printf("  target              %10.0f batches/s  %s; consumer blocked %.0f%% of the time\n",
              kTargetBatchesPerSecond, batches_per_s >= kTargetBatchesPerSecond ? "met" : "MISSED",
              100 * median(waits));
  if (pytorch_batches_per_s) {
    std::printf("  pytorch DataLoader  %10.0f batches/s  %12.0f samples/s  (%d runs x %d batches)\n",
                *pytorch_batches_per_s, *pytorch_samples_per_s, options.runs, kPyTorchBatches);
    std::printf("  ratio vs pytorch    %10.1f   (first touch of a fresh 4 KiB page here: %.2f us;\n"
                "                                DataLoader's figures move with it)\n",
                *ratio_vs_pytorch, first_touch);
  } else {
    std::printf("  pytorch DataLoader         n/a  %s\n", pytorch.note.c_str());
  }
  std::printf("  per run, sluice batches/s:  %s\n", format_values(rates, 0).c_str());
  if (pytorch.per_run) {
    std::printf("  per run, pytorch batches/s: %s\n", format_values(*pytorch.per_run, 0).c_str());
  }
}

}  // namespace sluice::bench
