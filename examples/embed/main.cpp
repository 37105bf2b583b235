// embed_trainer: reads every batch of a pipeline.lua through the installed
// libsluice, as a C++ trainer would, and prints what it read.
//
//   embed_trainer PIPELINE.lua [name=value ...]
//
// The name=value settings are `sluice run`'s (sluice/run_settings.h).
#include <sluice/loader.h>
#include <sluice/run_settings.h>

#include <cstdint>
#include <cstdio>
#include <exception>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s PIPELINE.lua [name=value ...]\n", argv[0]);
    return 2;
  }
  try {
    sluice::RunSettings settings(argv[1]);
    for (int i = 2; i < argc; ++i) settings.set(argv[i]);
    sluice::Script script = settings.load();
    sluice::Loader loader(script.options);

    std::uint64_t batches = 0, samples = 0, bytes = 0;
    while (std::optional<sluice::Batch> batch = loader.next()) {
      for (std::size_t f = 0; f < batch->field_count(); ++f) bytes += batch->field(f).nbytes;
      // A trainer would hand the fields to its framework here: batch->to_dlpack(f).
      ++batches;
      samples += batch->size();
    }
    const sluice::Stats stats = loader.stats();
    std::printf("cpp: batches=%llu samples=%llu bytes=%llu skipped=%zu\n", static_cast<unsigned long long>(batches),
                static_cast<unsigned long long>(samples), static_cast<unsigned long long>(bytes),
                stats.skipped_samples.size());
    return stats.batches_delivered == batches ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "embed_trainer: %s\n", e.what());
    return 1;
  }
}
