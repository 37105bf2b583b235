#include "cuda_check.h"

#include "sluice/error.h"

namespace sluice::cuda::detail {

std::string cuda_error_text(cudaError_t status) {
  return std::string(cudaGetErrorName(status)) + ": " + cudaGetErrorString(status);
}

void check_cuda(cudaError_t status, const char* call) {
  if (status != cudaSuccess) throw Error(std::string(call) + " failed: " + cuda_error_text(status));
}

DeviceGuard::DeviceGuard(int ordinal) {
  int current = 0;
  check_cuda(cudaGetDevice(&current), "cudaGetDevice");
  if (current != ordinal) {
    check_cuda(cudaSetDevice(ordinal), "cudaSetDevice");
    previous_ = current;
  }
}

DeviceGuard::~DeviceGuard() {
  if (previous_ >= 0) (void)cudaSetDevice(previous_);
}

}  // namespace sluice::cuda::detail
