// normalize_kernel.h: the CUDA kernel behind Backend::normalize_async.
#pragma once

#include <cuda_runtime_api.h>

#include "sluice/cuda/normalize_job.h"

namespace sluice::cuda::detail {

// Launches the kernel for `job` on `stream` (the current device's). Returns
// the launch status (cudaGetLastError after the launch).
cudaError_t launch_normalize(const NormalizeJob& job, cudaStream_t stream);

}  // namespace sluice::cuda::detail
