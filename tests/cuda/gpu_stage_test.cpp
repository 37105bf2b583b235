// The stage on CUDA device 0. Each test prints why and returns where the
// machine has no CUDA device.
#include <catch2/catch.hpp>

#include <cuda_runtime_api.h>
#include <dlpack/dlpack.h>

#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "sluice/cuda/host_backend.h"
#include "sluice/cuda/stage.h"
#include "sluice/loader.h"
#include "stage_test_support.h"

using namespace sluice;
using namespace sluice::cuda;
using namespace sluice::cuda::test;

#define REQUIRE_CUDA(call)                                                        \
  do {                                                                            \
    const cudaError_t status_ = (call);                                           \
    INFO(#call << ": " << cudaGetErrorName(status_));                             \
    REQUIRE(status_ == cudaSuccess);                                              \
  } while (false)

namespace {

// A stream for the test's "trainer", destroyed at scope exit.
struct TestStream {
  cudaStream_t s = nullptr;
  TestStream() { REQUIRE_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)); }
  ~TestStream() {
    cudaStreamSynchronize(s);
    cudaStreamDestroy(s);
  }
};

StageOptions gpu_stage(std::uint32_t depth, cudaStream_t stream) {
  StageOptions so;
  so.device = "cuda:0";
  so.depth = depth;
  so.consumer_stream = stream;
  return so;
}

template <typename T>
std::vector<T> to_host(const DeviceField& f, cudaStream_t stream) {
  std::vector<T> out(f.nbytes / sizeof(T));
  REQUIRE_CUDA(cudaMemcpyAsync(out.data(), f.data, f.nbytes, cudaMemcpyDeviceToHost, stream));
  REQUIRE_CUDA(cudaStreamSynchronize(stream));
  return out;
}

void sleep_on_stream(void* ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(reinterpret_cast<std::intptr_t>(ms)));
}

}  // namespace

TEST_CASE("gpu: batches arrive in device memory, in order, with their content", "[gpu][stage]") {
  if (!have_gpu_or_warn()) return;
  TestStream ts;
  Options o = image_options(203, 16, 3);
  o.shuffle = true;
  Loader loader(o);
  Stage stage(loader, gpu_stage(3, ts.s));
  CHECK(stage.device().kind == DeviceKind::cuda);
  std::uint64_t index = 0;
  while (auto b = stage.next()) {
    CHECK(b->index() == index++);
    const DeviceField image = b->field("image");
    cudaPointerAttributes attr{};
    REQUIRE_CUDA(cudaPointerGetAttributes(&attr, image.data));
    CHECK(attr.type == cudaMemoryTypeDevice);
    const auto px = to_host<std::uint8_t>(image, ts.s);
    const auto labels = to_host<std::int32_t>(b->field("label"), ts.s);
    for (std::size_t j = 0; j < b->size(); ++j) {
      const std::uint64_t id = b->sample_ids()[j];
      REQUIRE(labels[j] == static_cast<std::int32_t>(id));
      for (std::int64_t k = 0; k < 60; ++k) REQUIRE(px[j * 60 + k] == pixel_value(id, k));
    }
  }
  CHECK(index == 13);
}

TEST_CASE("gpu: the arena is registered as pinned memory while the stage lives", "[gpu][stage]") {
  if (!have_gpu_or_warn()) return;
  Loader loader(image_options(64, 8, 2));
  void* arena = loader.memory().data();
  {
    Stage stage(loader, gpu_stage(2, nullptr));
    cudaPointerAttributes attr{};
    REQUIRE_CUDA(cudaPointerGetAttributes(&attr, arena));
    CHECK(attr.type == cudaMemoryTypeHost);
    while (auto b = stage.next()) {
    }
  }
  cudaPointerAttributes attr{};
  REQUIRE_CUDA(cudaPointerGetAttributes(&attr, arena));
  CHECK(attr.type == cudaMemoryTypeUnregistered);
}

TEST_CASE("gpu: the normalize kernel matches the host kernel bit for bit", "[gpu][normalize]") {
  if (!have_gpu_or_warn()) return;
  for (DType to : {DType::f32, DType::f16}) {
    for (bool chw : {false, true}) {
      INFO("to " << dtype_name(to) << ", hwc_to_chw " << chw);
      TestStream ts;
      Loader loader(image_options(50, 8, 2, 7, 9, 3));
      StageOptions so = gpu_stage(2, ts.s);
      Normalize nz;
      nz.field = "image";
      nz.to = to;
      nz.mean = {123.7f, 116.3f, 103.5f};
      nz.stddev = {58.4f, 57.1f, 57.4f};
      nz.hwc_to_chw = chw;
      so.normalize = {nz};
      Stage stage(loader, so);
      while (auto b = stage.next()) {
        const DeviceField f = b->field(0);
        REQUIRE(f.dtype == to);
        std::vector<std::uint8_t> in(b->size() * 189);
        for (std::size_t j = 0; j < b->size(); ++j)
          for (std::int64_t k = 0; k < 189; ++k) in[j * 189 + k] = pixel_value(b->sample_ids()[j], k);
        std::vector<std::byte> expected(f.nbytes);
        NormalizeJob job;
        job.src = in.data();
        job.dst = expected.data();
        job.to = to;
        job.samples = static_cast<std::int64_t>(b->size());
        job.pixels = 63;
        job.channels = 3;
        job.hwc_to_chw = chw;
        job.param_count = 3;
        for (int c = 0; c < 3; ++c) {
          job.mean[c] = nz.mean[c];
          job.inv_std[c] = 1.0f / nz.stddev[c];
        }
        normalize_on_host(job);
        const auto got = to_host<std::byte>(f, ts.s);
        REQUIRE(std::memcmp(got.data(), expected.data(), f.nbytes) == 0);
      }
    }
  }
}

TEST_CASE("gpu: a released buffer is not overwritten before the trainer stream read it", "[gpu][stage]") {
  if (!have_gpu_or_warn()) return;
  TestStream ts;
  Loader loader(image_options(40, 4, 2));
  Stage stage(loader, gpu_stage(1, ts.s));  // one buffer: every copy reuses it
  struct Read {
    std::vector<std::uint64_t> ids;
    std::uint8_t* pinned = nullptr;
  };
  std::vector<Read> reads;
  while (auto b = stage.next()) {
    Read r;
    r.ids.assign(b->sample_ids().begin(), b->sample_ids().end());
    const DeviceField image = b->field(0);
    void* pinned = nullptr;
    REQUIRE_CUDA(cudaMallocHost(&pinned, image.nbytes));
    r.pinned = static_cast<std::uint8_t*>(pinned);
    // The trainer's stream is busy for 10 ms, then reads the batch.
    REQUIRE_CUDA(cudaLaunchHostFunc(ts.s, sleep_on_stream, reinterpret_cast<void*>(std::intptr_t{10})));
    REQUIRE_CUDA(cudaMemcpyAsync(r.pinned, image.data, image.nbytes, cudaMemcpyDeviceToHost, ts.s));
    b->release();  // at once: only the guard event keeps the next copy out
    reads.push_back(std::move(r));
  }
  REQUIRE_CUDA(cudaStreamSynchronize(ts.s));
  CHECK(reads.size() == 10);
  for (const Read& r : reads) {
    for (std::size_t j = 0; j < r.ids.size(); ++j)
      for (std::int64_t k = 0; k < 60; ++k) REQUIRE(r.pinned[j * 60 + k] == pixel_value(r.ids[j], k));
    cudaFreeHost(r.pinned);
  }
}

TEST_CASE("gpu: DLPack export is a CUDA tensor on the stage's device", "[gpu][dlpack]") {
  if (!have_gpu_or_warn()) return;
  Loader loader(image_options(16, 4, 1));
  Stage stage(loader, gpu_stage(2, nullptr));
  auto b = stage.next();
  REQUIRE(b);
  DLManagedTensor* t = b->to_dlpack(1);
  CHECK(t->dl_tensor.device.device_type == kDLCUDA);
  CHECK(t->dl_tensor.device.device_id == 0);
  CHECK(t->dl_tensor.dtype.code == kDLInt);
  CHECK(t->dl_tensor.dtype.bits == 32);
  CHECK(t->dl_tensor.shape[0] == 4);
  t->deleter(t);
}

TEST_CASE("gpu: other streams can wait on the batch's ready event", "[gpu][stage]") {
  if (!have_gpu_or_warn()) return;
  TestStream trainer, side;
  Loader loader(image_options(32, 8, 2));
  Stage stage(loader, gpu_stage(2, trainer.s));
  while (auto b = stage.next()) {
    REQUIRE_CUDA(cudaStreamWaitEvent(side.s, static_cast<cudaEvent_t>(b->ready_event()), 0));
    const auto labels = to_host<std::int32_t>(b->field(1), side.s);
    CHECK(labels[0] == static_cast<std::int32_t>(b->sample_ids()[0]));
    REQUIRE_CUDA(cudaStreamSynchronize(side.s));  // side reads are done before release
  }
}
