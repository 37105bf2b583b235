// sluice_imagenet_bench PIPELINE WORKERS EPOCHS [BATCH [SIDE]]
//
// Runs a pipeline.lua (examples/imagenet.lua next to a train/ tree) for EPOCHS
// epochs with WORKERS worker processes (batches of BATCH samples when given)
// and prints one JSON line, "side": SIDE (default "sluice"): images/s over
// everything after the first batch (worker start-up and the first batch are
// the same fixed cost on both sides and left out), and images/s per worker.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>

#include "sluice/loader.h"
#include "sluice/script.h"

int main(int argc, char** argv) {
  if (argc < 4 || argc > 6) {
    std::fprintf(stderr, "usage: %s PIPELINE WORKERS EPOCHS [BATCH [SIDE]]\n", argv[0]);
    return 2;
  }
  try {
    const auto workers = static_cast<std::uint32_t>(std::atoi(argv[2]));
    const auto epochs = static_cast<std::uint32_t>(std::atoi(argv[3]));
    const char* side = argc > 5 ? argv[5] : "sluice";
    sluice::Script script = sluice::load_script({.path = argv[1], .epochs = epochs, .workers = workers});
    if (argc > 4) script.options.batch_size = static_cast<std::uint32_t>(std::atoi(argv[4]));
    sluice::Loader loader(script.options);
    auto batch = loader.next();
    if (!batch) throw std::runtime_error("the pipeline gave no batch");
    const auto start = std::chrono::steady_clock::now();
    std::size_t images = 0;
    while ((batch = loader.next())) images += batch->size();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("{\"side\": \"%s\", \"workers\": %u, \"images\": %zu, \"seconds\": %.3f, "
                "\"images_per_s\": %.1f, \"images_per_s_per_worker\": %.1f}\n",
                side, workers, images, seconds, images / seconds, images / seconds / workers);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sluice_imagenet_bench: %s\n", e.what());
    return 1;
  }
}
