#include "transport.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "json.h"
#include "memcpy_baseline.h"
#include "pytorch_baseline.h"
#include "sluice/loader.h"
#include "sluice/producer.h"

namespace sluice::bench {
namespace {

constexpr std::size_t kBatchBytes = std::size_t{64} << 20;
constexpr std::uint32_t kSamplesPerBatch = 64;  // 64 samples of 1 MiB
constexpr std::int64_t kFloatsPerSample = kBatchBytes / kSamplesPerBatch / sizeof(float);
constexpr std::uint64_t kDefaultBatches = 64;
constexpr int kMemcpyCopies = 5;
constexpr double kTargetRatio = 0.8;
// PyTorch moves 64 MiB batches far slower; fewer batches keep its run short.
constexpr int kPyTorchWarmup = 2;
constexpr int kPyTorchBatches = 8;

// Writes the whole batch, and nothing else: field 0 filled with the batch index.
class FillProducer final : public Producer {
 public:
  void fill(BatchContext& batch) override {
    float* data = batch.as<float>(0);
    const std::size_t count = batch.size() * batch.sample_bytes(0) / sizeof(float);
    std::fill_n(data, count, static_cast<float>(batch.batch_index()));
  }
};

struct Run {
  double gb_per_s;
  double consumer_wait_fraction;  // share of the timed interval next() spent blocked
};

// Takes the next batch, checks it is the expected 64 MiB fill, touches every page.
void consume(Loader& loader, std::uint64_t expected_index) {
  std::optional<Batch> batch = loader.next();
  if (!batch) throw std::runtime_error("the loader ended early");
  const FieldView field = batch->field(0);
  const std::span<const float> values = field.as<const float>();
  const auto expected = static_cast<float>(expected_index);
  if (batch->index() != expected_index || field.nbytes != kBatchBytes || values.front() != expected ||
      values.back() != expected) {
    throw std::runtime_error("batch " + std::to_string(batch->index()) +
                             " does not hold the fill of batch " + std::to_string(expected_index));
  }
  keep(touch_pages(field.data, field.nbytes));
}

Run measure_once(const CaseOptions& options, std::uint32_t slots, std::uint64_t warmup) {
  Options loader_options;
  // `slots` batches more than are consumed keep the pipeline as full when the
  // clock stops as when it starts, so prefetched batches do not flatter the rate.
  loader_options.dataset_size = (warmup + options.batches + slots) * kSamplesPerBatch;
  loader_options.batch_size = kSamplesPerBatch;
  loader_options.fields = {{"x", DType::f32, {kFloatsPerSample}}};
  loader_options.producer = std::make_shared<FillProducer>();
  loader_options.workers = options.workers;
  loader_options.slots = slots;
  Loader loader(std::move(loader_options));

  std::uint64_t index = 0;
  for (; index < warmup; ++index) consume(loader, index);
  const Stats before = loader.stats();
  const Stopwatch clock;
  for (; index < warmup + options.batches; ++index) consume(loader, index);
  const double seconds = clock.seconds();
  const Stats after = loader.stats();
  return {static_cast<double>(options.batches * kBatchBytes) / seconds / 1e9,
          static_cast<double>(after.consumer_wait_ns - before.consumer_wait_ns) / 1e9 / seconds};
}

}  // namespace

void run_transport_case(const CaseOptions& requested) {
  CaseOptions options = requested;
  if (options.batches == 0) options.batches = kDefaultBatches;
  const std::uint32_t slots = options.slots != 0 ? options.slots : 2 * options.workers + 2;
  // The first batches of a fresh Loader pay for starting its workers (each maps
  // the whole arena in); a few rounds through every slot leave only steady
  // state to time.
  const std::uint64_t warmup = 3 * std::uint64_t{slots};

  std::vector<double> rates, memcpy_rates, ratios, waits;
  for (int run = 0; run < options.runs; ++run) {
    memcpy_rates.push_back(memcpy_gb_per_s(kBatchBytes, kMemcpyCopies));
    const Run result = measure_once(options, slots, warmup);
    rates.push_back(result.gb_per_s);
    waits.push_back(result.consumer_wait_fraction);
    ratios.push_back(result.gb_per_s / memcpy_rates.back());
  }

  const PyTorchBaseline pytorch =
      options.pytorch
          ? run_pytorch_baseline({"transport", "--runs", std::to_string(options.runs), "--workers",
                                  std::to_string(options.workers), "--warmup", std::to_string(kPyTorchWarmup),
                                  "--batches", std::to_string(kPyTorchBatches)})
          : pytorch_skipped("skipped (--no-pytorch)");

  const double gb_per_s = median(rates);
  const double memcpy = median(memcpy_rates);
  const double ratio = gb_per_s / memcpy;
  const std::optional<double> pytorch_gb_per_s =
      pytorch.per_run ? std::optional(median(*pytorch.per_run)) : std::nullopt;
  const std::optional<double> ratio_vs_pytorch =
      pytorch_gb_per_s ? std::optional(gb_per_s / *pytorch_gb_per_s) : std::nullopt;

  const double first_touch = first_touch_us();
  if (options.json) {
    JsonObject per_run;
    per_run.numbers("gb_per_s", rates)
        .numbers("memcpy_gb_per_s", memcpy_rates)
        .numbers("ratio_vs_memcpy", ratios)
        .numbers("consumer_wait_fraction", waits)
        .numbers("pytorch_gb_per_s", pytorch.per_run);
    JsonObject out;
    out.string("case", "transport")
        .integer("workers", options.workers)
        .integer("runs", options.runs)
        .integer("slots", slots)
        .integer("batch_bytes", kBatchBytes)
        .integer("batches_per_run", static_cast<std::int64_t>(options.batches))
        .integer("warmup_batches", static_cast<std::int64_t>(warmup))
        .number("gb_per_s", gb_per_s)
        .number("memcpy_gb_per_s", memcpy)
        .number("ratio_vs_memcpy", ratio)
        .number("target_ratio_vs_memcpy", kTargetRatio)
        .boolean("meets_target", ratio >= kTargetRatio)
        .number("consumer_wait_fraction", median(waits))
        .number("pytorch_gb_per_s", pytorch_gb_per_s)
        .number("ratio_vs_pytorch", ratio_vs_pytorch)
        .integer("pytorch_batches_per_run", kPyTorchBatches)
        .string_or_null("pytorch_note", pytorch.note)
        .number("first_touch_us", first_touch)
        .object("per_run", per_run);
    std::printf("%s\n", out.str().c_str());
    return;
  }

  std::printf("sluice bench transport: %u workers, %u slots, %d runs x %llu batches of 64 MiB float32 (medians)\n",
              options.workers, slots, options.runs, static_cast<unsigned long long>(options.batches));
  std::printf("  sluice delivered    %8.2f GB/s   consumer blocked %.0f%% of the time\n", gb_per_s,
              100 * median(waits));
  std::printf("  memcpy, 1 thread    %8.2f GB/s\n", memcpy);
  std::printf("  ratio vs memcpy     %8.2f        target >= %.1f: %s\n", ratio, kTargetRatio,
              ratio >= kTargetRatio ? "met" : "MISSED");
  if (pytorch_gb_per_s) {
    std::printf("  pytorch DataLoader  %8.2f GB/s   (%d runs x %d batches)\n", *pytorch_gb_per_s, options.runs,
                kPyTorchBatches);
    std::printf("  ratio vs pytorch    %8.2f     (first touch of a fresh 4 KiB page here: %.2f us;\n"
                "                                DataLoader's figures move with it)\n",
                *ratio_vs_pytorch, first_touch);
  } else {
    std::printf("  pytorch DataLoader       n/a        %s\n", pytorch.note.c_str());
  }
  std::printf("  per run, sluice GB/s:  %s\n", format_values(rates, 2).c_str());
  std::printf("  per run, memcpy GB/s:  %s\n", format_values(memcpy_rates, 2).c_str());
  if (pytorch.per_run) std::printf("  per run, pytorch GB/s: %s\n", format_values(*pytorch.per_run, 2).c_str());
}

}  // namespace sluice::bench
