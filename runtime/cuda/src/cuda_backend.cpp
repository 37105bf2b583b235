#include "sluice/cuda/cuda_backend.h"

#include <cuda_runtime_api.h>

#include <string>

#include "cuda_check.h"
#include "normalize_kernel.h"
#include "sluice/error.h"

namespace sluice::cuda {

namespace {

using detail::check_cuda;
using detail::DeviceGuard;

cudaStream_t as_stream(StreamHandle s) { return static_cast<cudaStream_t>(s); }
cudaEvent_t as_event(EventHandle e) { return static_cast<cudaEvent_t>(e); }

// Every call holds the backend's device current (DeviceGuard): the null
// stream then means that device's legacy default stream, and allocations land
// on it, whichever device the calling thread had selected.
class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(int ordinal) : ordinal_(ordinal) {
    DeviceGuard guard(ordinal_);
    check_cuda(cudaFree(nullptr), "cudaFree(nullptr) (creating the CUDA context)");
  }

  DeviceSpec device() const override { return {DeviceKind::cuda, ordinal_}; }

  void bind_thread() override { check_cuda(cudaSetDevice(ordinal_), "cudaSetDevice"); }

  void* allocate(std::size_t bytes) override {
    DeviceGuard guard(ordinal_);
    void* p = nullptr;
    check_cuda(cudaMalloc(&p, bytes), "cudaMalloc");
    return p;
  }

  void deallocate(void* p) noexcept override {
    if (p) (void)cudaFree(p);
  }

  void register_host(std::span<std::byte> memory) override {
    DeviceGuard guard(ordinal_);
    check_cuda(cudaHostRegister(memory.data(), memory.size(), cudaHostRegisterPortable),
               "cudaHostRegister (the Loader's arena)");
  }

  void unregister_host(std::span<std::byte> memory) noexcept override {
    (void)cudaHostUnregister(memory.data());
  }

  StreamHandle create_stream() override {
    DeviceGuard guard(ordinal_);
    cudaStream_t s = nullptr;
    check_cuda(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    return s;
  }

  void destroy_stream(StreamHandle stream) noexcept override {
    if (!stream) return;
    (void)cudaStreamSynchronize(as_stream(stream));
    (void)cudaStreamDestroy(as_stream(stream));
  }

  EventHandle create_event() override {
    DeviceGuard guard(ordinal_);
    cudaEvent_t e = nullptr;
    check_cuda(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreateWithFlags");
    return e;
  }

  void destroy_event(EventHandle event) noexcept override {
    if (event) (void)cudaEventDestroy(as_event(event));
  }

  void copy_async(void* dst, const void* src, std::size_t bytes, StreamHandle stream) override {
    DeviceGuard guard(ordinal_);
    check_cuda(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, as_stream(stream)),
               "cudaMemcpyAsync (host to device)");
  }

  void normalize_async(const NormalizeJob& job, StreamHandle stream) override {
    DeviceGuard guard(ordinal_);
    check_cuda(detail::launch_normalize(job, as_stream(stream)), "normalize kernel launch");
  }

  void record(EventHandle event, StreamHandle stream) override {
    DeviceGuard guard(ordinal_);
    check_cuda(cudaEventRecord(as_event(event), as_stream(stream)), "cudaEventRecord");
  }

  void wait(StreamHandle stream, EventHandle event) override {
    DeviceGuard guard(ordinal_);
    check_cuda(cudaStreamWaitEvent(as_stream(stream), as_event(event), 0), "cudaStreamWaitEvent");
  }

  bool query(EventHandle event) override {
    const cudaError_t status = cudaEventQuery(as_event(event));
    if (status == cudaErrorNotReady) return false;
    check_cuda(status, "cudaEventQuery");
    return true;
  }

  void synchronize(EventHandle event) override {
    check_cuda(cudaEventSynchronize(as_event(event)), "cudaEventSynchronize");
  }

 private:
  int ordinal_;
};

}  // namespace

std::shared_ptr<Backend> make_cuda_backend(int ordinal) {
  std::string why;
  const int count = cuda_device_count(&why);
  if (count == 0) throw Error("CUDA device " + std::to_string(ordinal) + ": no CUDA device (" + why + ")");
  if (ordinal < 0 || ordinal >= count) {
    throw Error("CUDA device " + std::to_string(ordinal) + " does not exist; this machine has " +
                std::to_string(count));
  }
  return std::make_shared<CudaBackend>(ordinal);
}

}  // namespace sluice::cuda
