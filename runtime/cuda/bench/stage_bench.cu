// sluice_stage_bench: what the CUDA stage costs and hides, on one GPU.
//
//   sluice_stage_bench [--batch-mb 8] [--batches 200] [--trainer-ms 2] [--workers 4] [--depth 3]
//
// 1. H2D throughput: batches of batch-mb MiB of uint8 (filled by workers that
//    do nothing else, so the pipeline outruns PCIe) staged by a Stage whose
//    consumer releases each batch at once, against cudaMemcpyAsync of the same
//    sizes from cudaMallocHost memory into the same number of device buffers.
//    Reported: both in GB/s and their ratio (target >= 0.9).
// 2. Trainer stall: a trainer whose step is a kernel that runs trainer-ms on
//    its stream, fed by the stage. The stall of a step is the GPU idle time
//    on the trainer stream between the end of one step and the start of the
//    next (CUDA events), i.e. the time the trainer waited for data.
//    Reported: mean stall per batch as a % of trainer-ms (target < 1%), and
//    the host time next() blocked.
//
// Without a CUDA device it prints why and exits 0.
#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "sluice/cuda/device.h"
#include "sluice/cuda/stage.h"
#include "sluice/error.h"
#include "sluice/loader.h"
#include "sluice/producer.h"

namespace {

struct Args {
  double batch_mb = 8;
  int batches = 200;
  double trainer_ms = 2;
  std::uint32_t workers = 4;
  std::uint32_t depth = 3;
};

void check(cudaError_t status, const char* call) {
  if (status != cudaSuccess) {
    std::fprintf(stderr, "sluice_stage_bench: %s failed: %s\n", call, cudaGetErrorString(status));
    std::exit(1);
  }
}

// A producer that leaves the slot as it is: the fastest possible pipeline.
class UntouchedProducer final : public sluice::Producer {
 public:
  void fill(sluice::BatchContext&) override {}
};

constexpr std::uint32_t kSamplesPerBatch = 16;

sluice::Options loader_options(const Args& a, int batches) {
  sluice::Options o;
  const auto sample_bytes =
      static_cast<std::int64_t>(a.batch_mb * 1024 * 1024 / kSamplesPerBatch);
  o.dataset_size = static_cast<std::uint64_t>(batches) * kSamplesPerBatch;
  o.batch_size = kSamplesPerBatch;
  o.workers = a.workers;
  o.fields = {{"data", sluice::DType::u8, {sample_bytes}}};
  o.producer = std::make_shared<UntouchedProducer>();
  return o;
}

// Busy for `ns` nanoseconds of GPU time (one thread, on the global timer).
__global__ void spin_kernel(std::uint64_t ns) {
  std::uint64_t start = 0, now = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < ns);
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// GB/s of the stage with a consumer that only releases.
double stage_throughput(const Args& a, std::size_t* batch_bytes) {
  const int warmup = 10;
  sluice::Loader loader(loader_options(a, a.batches + warmup));
  cudaStream_t stream = nullptr;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  double gbps = 0;
  {
    sluice::cuda::StageOptions so;
    so.device = "cuda:0";
    so.depth = a.depth;
    so.consumer_stream = stream;
    sluice::cuda::Stage stage(loader, so);
    for (int i = 0; i < warmup; ++i) stage.next();
    check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    const auto t0 = std::chrono::steady_clock::now();
    std::size_t bytes = 0;
    while (auto b = stage.next()) bytes += b->field(0).nbytes;
    check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");  // the last copy has landed
    gbps = static_cast<double>(bytes) / seconds_since(t0) / 1e9;
    *batch_bytes = bytes / static_cast<std::size_t>(a.batches);
  }
  cudaStreamDestroy(stream);
  return gbps;
}

// GB/s of back-to-back cudaMemcpyAsync from pinned memory, same sizes.
double plain_throughput(const Args& a, std::size_t batch_bytes) {
  void* host = nullptr;
  check(cudaMallocHost(&host, batch_bytes), "cudaMallocHost");
  std::memset(host, 1, batch_bytes);
  std::vector<void*> dev(a.depth);
  for (void*& d : dev) check(cudaMalloc(&d, batch_bytes), "cudaMalloc");
  cudaStream_t stream = nullptr;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  for (int i = 0; i < 10; ++i) {
    check(cudaMemcpyAsync(dev[i % a.depth], host, batch_bytes, cudaMemcpyHostToDevice, stream), "cudaMemcpyAsync");
  }
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < a.batches; ++i) {
    check(cudaMemcpyAsync(dev[i % a.depth], host, batch_bytes, cudaMemcpyHostToDevice, stream), "cudaMemcpyAsync");
  }
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  const double gbps = static_cast<double>(batch_bytes) * a.batches / seconds_since(t0) / 1e9;
  cudaStreamDestroy(stream);
  for (void* d : dev) cudaFree(d);
  cudaFreeHost(host);
  return gbps;
}

struct StallResult {
  double stall_pct = 0;       // mean GPU idle gap between steps, % of trainer-ms
  double max_gap_ms = 0;
  double host_wait_ms = 0;    // total time next() blocked
  double samples_per_s = 0;
};

StallResult trainer_stall(const Args& a) {
  const int warmup = 10;
  sluice::Loader loader(loader_options(a, a.batches + warmup));
  cudaStream_t stream = nullptr;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  std::vector<cudaEvent_t> begin(a.batches), end(a.batches);
  for (int i = 0; i < a.batches; ++i) {
    check(cudaEventCreate(&begin[i]), "cudaEventCreate");
    check(cudaEventCreate(&end[i]), "cudaEventCreate");
  }
  const auto ns = static_cast<std::uint64_t>(a.trainer_ms * 1e6);
  StallResult r;
  {
    sluice::cuda::StageOptions so;
    so.device = "cuda:0";
    so.depth = a.depth;
    so.consumer_stream = stream;
    sluice::cuda::Stage stage(loader, so);
    for (int i = 0; i < warmup; ++i) {
      auto b = stage.next();
      spin_kernel<<<1, 1, 0, stream>>>(ns);
    }
    const std::uint64_t wait0 = stage.stats().consumer_wait_ns;
    const auto t0 = std::chrono::steady_clock::now();
    int k = 0;
    while (auto b = stage.next()) {
      check(cudaEventRecord(begin[k], stream), "cudaEventRecord");
      spin_kernel<<<1, 1, 0, stream>>>(ns);  // the trainer's step on batch k
      check(cudaGetLastError(), "spin_kernel launch");
      check(cudaEventRecord(end[k], stream), "cudaEventRecord");
      ++k;
    }
    check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    r.samples_per_s = static_cast<double>(k) * kSamplesPerBatch / seconds_since(t0);
    r.host_wait_ms = static_cast<double>(stage.stats().consumer_wait_ns - wait0) / 1e6;
  }
  double gaps = 0;
  for (int i = 1; i < a.batches; ++i) {
    float ms = 0;
    check(cudaEventElapsedTime(&ms, end[i - 1], begin[i]), "cudaEventElapsedTime");
    gaps += ms;
    r.max_gap_ms = std::max(r.max_gap_ms, static_cast<double>(ms));
  }
  r.stall_pct = 100.0 * gaps / (a.batches - 1) / a.trainer_ms;
  for (int i = 0; i < a.batches; ++i) {
    cudaEventDestroy(begin[i]);
    cudaEventDestroy(end[i]);
  }
  cudaStreamDestroy(stream);
  return r;
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr, "usage: %s [--batch-mb X] [--batches N] [--trainer-ms T] [--workers W] [--depth D]\n",
                   argv[0]);
      std::exit(2);
    }
    const char* v = argv[++i];
    if (k == "--batch-mb") a.batch_mb = std::atof(v);
    else if (k == "--batches") a.batches = std::atoi(v);
    else if (k == "--trainer-ms") a.trainer_ms = std::atof(v);
    else if (k == "--workers") a.workers = static_cast<std::uint32_t>(std::atoi(v));
    else if (k == "--depth") a.depth = static_cast<std::uint32_t>(std::atoi(v));
    else {
      std::fprintf(stderr, "%s: unknown option %s\n", argv[0], k.c_str());
      std::exit(2);
    }
  }
  if (a.batch_mb <= 0 || a.batches < 2 || a.trainer_ms <= 0 || a.workers < 1 || a.depth < 1) {
    std::fprintf(stderr, "%s: options out of range\n", argv[0]);
    std::exit(2);
  }
  return a;
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = parse(argc, argv);
  std::string why;
  if (sluice::cuda::cuda_device_count(&why) == 0) {
    std::printf("sluice_stage_bench: no CUDA device (%s); nothing to measure\n", why.c_str());
    return 0;
  }
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  try {
    std::size_t batch_bytes = 0;
    const double stage = stage_throughput(a, &batch_bytes);
    const double plain = plain_throughput(a, batch_bytes);
    std::printf("device           %s\n", prop.name);
    std::printf("batch            %zu bytes x %d batches, depth %u, %u workers\n", batch_bytes, a.batches, a.depth,
                a.workers);
    std::printf("h2d stage        %.2f GB/s\n", stage);
    std::printf("h2d plain        %.2f GB/s (cudaMemcpyAsync from cudaMallocHost)\n", plain);
    std::printf("h2d ratio        %.3f (target >= 0.9)\n", stage / plain);
    const StallResult s = trainer_stall(a);
    std::printf("trainer step     %.3f ms (GPU kernel)\n", a.trainer_ms);
    std::printf("trainer stall    %.3f %% of the step per batch (target < 1%%), worst gap %.3f ms\n", s.stall_pct,
                s.max_gap_ms);
    std::printf("next() blocked   %.3f ms in total\n", s.host_wait_ms);
    std::printf("samples/s        %.0f\n", s.samples_per_s);
  } catch (const sluice::Error& e) {
    std::fprintf(stderr, "sluice_stage_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
