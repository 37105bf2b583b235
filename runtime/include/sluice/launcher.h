// sluice/launcher.h: rank and world size from the launchers users already run.
//
// detect_launch() reads, in this order: torchrun (RANK, WORLD_SIZE,
// LOCAL_RANK), Open MPI (OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE,
// OMPI_COMM_WORLD_LOCAL_RANK), MPICH/PMI (PMI_RANK, PMI_SIZE, and
// MPI_LOCALRANKID when set), SLURM (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID).
// With none of them set, the process is rank 0 of 1.
//
// Thread safety: reads the environment; do not call while another thread
// changes it.
#pragma once

#include "sluice/export.h"

#include <cstdint>
#include <string>
#include <vector>

#include "sluice/options.h"

namespace sluice {

struct SLUICE_API Launch {
  std::uint32_t rank = 0;
  std::uint32_t world_size = 1;
  std::uint32_t local_rank = 0;  // picks the CUDA device on a multi-GPU node
  std::string launcher = "none"; // "torchrun", "openmpi", "pmi", "slurm" or "none"
  // Half a launcher's variables (RANK without WORLD_SIZE, say): ignored, and
  // said here, since a rank that silently runs as 0 of 1 reads every sample.
  std::vector<std::string> warnings;
};

// Throws Error naming the variable if a launcher's variables are malformed
// (not a number, rank >= world size).
SLUICE_API Launch detect_launch();

// Sets options.rank and options.world_size from the launch.
SLUICE_API void apply_launch(Options& options, const Launch& launch);

// One process driving `towers` devices: the options for device `tower`, a
// shard of this rank's shard, so every device gets different samples and the
// same batch count (rank' = rank * towers + tower, world' = world * towers).
SLUICE_API Options tower_options(Options options, std::uint32_t tower, std::uint32_t towers);

}  // namespace sluice
