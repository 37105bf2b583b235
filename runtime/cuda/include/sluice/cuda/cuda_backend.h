// sluice/cuda/cuda_backend.h: the Backend over a real CUDA device.
//
// Streams are created non-blocking (they do not synchronize with the legacy
// default stream) and events without timing. Every call that may run on a
// thread other than the one that created the backend first makes the
// backend's device current for the duration of the call and restores the
// caller's device afterwards.
#pragma once

#include <memory>

#include "sluice/cuda/backend.h"

namespace sluice::cuda {

// Throws Error if CUDA device `ordinal` does not exist or cannot be used.
std::shared_ptr<Backend> make_cuda_backend(int ordinal);

}  // namespace sluice::cuda
