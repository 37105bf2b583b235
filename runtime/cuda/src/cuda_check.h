// cuda_check.h: CUDA runtime errors as sluice::Error, and the current device
// held for a scope.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

namespace sluice::cuda::detail {

// "cudaErrorNoDevice: no CUDA-capable device is detected"
std::string cuda_error_text(cudaError_t status);

// Throws Error "<call> failed: <error text>" unless status is cudaSuccess.
void check_cuda(cudaError_t status, const char* call);

// Makes `ordinal` the calling thread's current device until destroyed, then
// restores the previous one. Throws Error if the device cannot be made current.
class DeviceGuard {
 public:
  explicit DeviceGuard(int ordinal);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;  // -1: nothing to restore
};

}  // namespace sluice::cuda::detail
