// sluice/cuda/stage_options.h: everything a Stage is built from, in one struct.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sluice/cuda/backend.h"
#include "sluice/cuda/normalize.h"

namespace sluice::cuda {

struct StageOptions {
  // "cuda", "cuda:N", "auto" or "cpu" (see device.h).
  std::string device = "cuda";

  // Device buffers in the ring, each holding one whole batch (>= 1). With
  // depth d the stage copies up to d - (batches the trainer holds) batches
  // ahead; 2 already overlaps the copy of batch k+1 with work on batch k.
  std::uint32_t depth = 3;

  // The trainer's stream. Each delivered batch is made ready on it (it waits
  // on the batch's copy event), and a released batch's buffer is not written
  // again before the work submitted to it up to the release has run. Null:
  // the legacy default stream of the device (on the host backend: the
  // consumer's thread, so a delivered batch is already complete).
  StreamHandle consumer_stream = nullptr;

  // Fields to finish on the device after the copy; the rest arrive as they are.
  std::vector<Normalize> normalize;
};

}  // namespace sluice::cuda
