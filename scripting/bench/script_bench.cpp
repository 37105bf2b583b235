// sluice_script_bench: what a Lua map costs against C++, and how it scales.
//
//   sluice_script_bench [--runs N]     (default 5; every figure is a median)
//
// 1. normalize.lua's per-pixel transform (uint8 HWC 224x224x3 -> normalized
//    float32 CHW) against the same loop in C++ (a sluice::per_sample Producer):
//      direct  each Producer's fill() over a local batch in this process: the
//              transform alone, no processes, no shared memory; timed in thread
//              CPU time, so other load on the machine does not skew the ratio
//      loader  through a Loader with 1 worker: what a user gets
//    Reported as Lua time / C++ time (target <= 1.5).
// 2. cpu_bound.lua with 1 and 2 workers through a Loader: the speed-up
//    (target >= 1.8 on 2 free cores).
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "sluice/error.h"
#include "sluice/loader.h"
#include "sluice/producer.h"
#include "sluice/script.h"

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kH = 224, kW = 224, kC = 3;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// The C++ twin of normalize.lua's map.
void normalize(const std::uint8_t* src, float* dst) {
  constexpr float kMean[3] = {0.485f, 0.456f, 0.406f};
  constexpr float kStd[3] = {0.229f, 0.224f, 0.225f};
  const float s0 = 1 / (255 * kStd[0]), s1 = 1 / (255 * kStd[1]), s2 = 1 / (255 * kStd[2]);
  const float b0 = -kMean[0] / kStd[0], b1 = -kMean[1] / kStd[1], b2 = -kMean[2] / kStd[2];
  constexpr int plane = kH * kW;
  for (int p = 0; p < plane; ++p) {
    const int q = 3 * p;
    dst[p] = src[q] * s0 + b0;
    dst[plane + p] = src[q + 1] * s1 + b1;
    dst[2 * plane + p] = src[q + 2] * s2 + b2;
  }
}

std::shared_ptr<sluice::Producer> cpp_normalize_producer() {
  auto image = std::make_shared<std::vector<std::uint8_t>>(kH * kW * kC);
  for (std::size_t k = 0; k < image->size(); ++k) (*image)[k] = static_cast<std::uint8_t>((k * 7 + 3) % 256);
  return sluice::per_sample([image](const sluice::SampleRef& s) { normalize(image->data(), s.as<float>(0)); });
}

double thread_cpu_seconds() {
  timespec ts;
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// CPU seconds for `producer` to fill every batch of `options` in this thread.
double direct_seconds(sluice::Producer& producer, const sluice::Options& options) {
  const sluice::FieldSpec& field = options.fields.at(0);
  const std::size_t sample_bytes = sluice::dtype_size(field.dtype) * kC * kH * kW;
  std::vector<std::size_t> sizes{sample_bytes};
  std::vector<std::uint64_t> offsets{0};
  std::vector<std::byte> memory(sample_bytes * options.batch_size);
  std::vector<std::uint64_t> samples(options.batch_size);
  const std::uint64_t batches = options.dataset_size / options.batch_size;
  const double start = thread_cpu_seconds();
  for (std::uint64_t b = 0; b < batches; ++b) {
    for (std::uint32_t j = 0; j < options.batch_size; ++j) samples[j] = b * options.batch_size + j;
    sluice::BatchContext ctx(0, b, 0, samples, options.fields, sizes, offsets, memory.data());
    producer.fill(ctx);
  }
  return thread_cpu_seconds() - start;
}

// Seconds from the first delivered batch to the last (start-up excluded), and
// the samples delivered in that span.
struct Span {
  double seconds;
  std::uint64_t samples;
};

Span loader_span(const sluice::Options& options) {
  sluice::Loader loader(options);
  auto first = loader.next();
  if (!first) throw sluice::Error("no batch");
  first->release();
  const auto start = Clock::now();
  std::uint64_t samples = 0;
  while (auto batch = loader.next()) samples += batch->size();
  return {std::chrono::duration<double>(Clock::now() - start).count(), samples};
}

}  // namespace

int main(int argc, char** argv) {
  int runs = 5;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--runs") == 0 && i + 1 < argc) {
      runs = std::max(1, std::atoi(argv[++i]));
    } else {
      std::fprintf(stderr, "usage: %s [--runs N]\n", argv[0]);
      return 2;
    }
  }
  try {
    const std::string dir = SLUICE_SCRIPT_BENCH_DIR;

    // 1. Lua vs C++ per-pixel transform.
    sluice::Script lua = sluice::load_script({.path = dir + "/normalize.lua", .workers = 1});
    sluice::Options cpp = lua.options;
    cpp.producer = cpp_normalize_producer();
    lua.options.producer->start_worker(0);  // a Lua state in this process, for the direct runs
    cpp.producer->start_worker(0);
    std::vector<double> lua_direct, cpp_direct, lua_loader, cpp_loader;
    for (int r = 0; r < runs; ++r) {
      lua_direct.push_back(direct_seconds(*lua.options.producer, lua.options));
      cpp_direct.push_back(direct_seconds(*cpp.producer, cpp));
      const Span l = loader_span(lua.options);
      const Span c = loader_span(cpp);
      lua_loader.push_back(l.seconds / static_cast<double>(l.samples));
      cpp_loader.push_back(c.seconds / static_cast<double>(c.samples));
    }
    const double samples = static_cast<double>(lua.options.dataset_size / lua.options.batch_size *
                                               lua.options.batch_size);
    const double ld = median(lua_direct) / samples * 1e6, cd = median(cpp_direct) / samples * 1e6;
    const double ll = median(lua_loader) * 1e6, cl = median(cpp_loader) * 1e6;
    std::printf("per-pixel normalize, uint8 HWC 224x224x3 -> float32 CHW (median of %d runs)\n", runs);
    std::printf("  direct (CPU) Lua %7.1f us/sample   C++ %7.1f us/sample   Lua/C++ %.2f\n", ld, cd, ld / cd);
    std::printf("  loader, 1 w  Lua %7.1f us/sample   C++ %7.1f us/sample   Lua/C++ %.2f\n", ll, cl, ll / cl);

    // 2. Worker scaling of a CPU-bound map.
    std::vector<double> one, two;
    for (int r = 0; r < runs; ++r) {
      for (std::uint32_t workers : {1u, 2u}) {
        sluice::Script s = sluice::load_script({.path = dir + "/cpu_bound.lua", .workers = workers});
        const Span span = loader_span(s.options);
        (workers == 1 ? one : two).push_back(static_cast<double>(span.samples) / span.seconds);
      }
    }
    const double r1 = median(one), r2 = median(two);
    std::printf("CPU-bound map (cpu_bound.lua), median of %d runs\n", runs);
    std::printf("  1 worker %8.1f samples/s   2 workers %8.1f samples/s   speed-up %.2fx\n", r1, r2, r2 / r1);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sluice_script_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
