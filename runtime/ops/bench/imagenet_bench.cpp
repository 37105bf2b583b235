// ops_imagenet_bench PIPELINE WORKERS EPOCHS
//
// Runs a pipeline.lua (examples/imagenet.lua next to a train/ tree) for EPOCHS
// epochs with WORKERS worker processes and prints one JSON line: images/s over
// everything after the first batch (worker start-up and the first batch are
// the same fixed cost on both sides and left out), and images/s per worker.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>

#include "sluice/loader.h"
#include "sluice/script.h"

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s PIPELINE WORKERS EPOCHS\n", argv[0]);
    return 2;
  }
  try {
    const auto workers = static_cast<std::uint32_t>(std::atoi(argv[2]));
    const auto epochs = static_cast<std::uint32_t>(std::atoi(argv[3]));
    sluice::Script script = sluice::load_script({.path = argv[1], .epochs = epochs, .workers = workers});
    sluice::Loader loader(script.options);
    auto batch = loader.next();
    if (!batch) throw std::runtime_error("the pipeline gave no batch");
    const auto start = std::chrono::steady_clock::now();
    std::size_t images = 0;
    while ((batch = loader.next())) images += batch->size();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("{\"side\": \"sluice\", \"workers\": %u, \"images\": %zu, \"seconds\": %.3f, "
                "\"images_per_s\": %.1f, \"images_per_s_per_worker\": %.1f}\n",
                workers, images, seconds, images / seconds, images / seconds / workers);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ops_imagenet_bench: %s\n", e.what());
    return 1;
  }
}
