#include "sluice/launcher.h"

#include <cerrno>
#include <cstdlib>
#include <optional>
#include <utility>

#include "sluice/error.h"

namespace sluice {

namespace {

std::optional<std::uint32_t> env_number(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  unsigned long n = std::strtoul(v, &end, 10);
  if (errno != 0 || *end != '\0' || n > 0xffffffffUL) {
    throw Error(std::string("environment variable ") + name + "='" + v + "' is not a non-negative integer");
  }
  return static_cast<std::uint32_t>(n);
}

struct Source {
  const char* launcher;
  const char* rank;
  const char* size;
  const char* local_rank;
};

constexpr Source kSources[] = {
    {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK"},
    {"openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"},
    {"pmi", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID"},
    {"slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"},
};

}  // namespace

Launch detect_launch() {
  std::vector<std::string> warnings;
  for (const Source& s : kSources) {
    std::optional<std::uint32_t> rank = env_number(s.rank), size = env_number(s.size);
    if (rank.has_value() != size.has_value()) {
      const char* set = rank ? s.rank : s.size;
      const char* unset = rank ? s.size : s.rank;
      warnings.push_back(std::string(set) + " is set but " + unset + " is not: " + s.launcher +
                         "'s variables are ignored, so this process is not sharded by them (set both, or " +
                         "neither; or pass --rank and --world-size)");
    }
    if (!rank || !size) continue;
    if (*size == 0 || *rank >= *size) {
      throw Error(std::string(s.launcher) + ": " + s.rank + "=" + std::to_string(*rank) + " is not below " + s.size +
                  "=" + std::to_string(*size));
    }
    Launch l;
    l.rank = *rank;
    l.world_size = *size;
    l.local_rank = env_number(s.local_rank).value_or(0);
    l.launcher = s.launcher;
    l.warnings = std::move(warnings);
    return l;
  }
  Launch none;
  none.warnings = std::move(warnings);
  return none;
}

void apply_launch(Options& options, const Launch& launch) {
  options.rank = launch.rank;
  options.world_size = launch.world_size;
}

Options tower_options(Options options, std::uint32_t tower, std::uint32_t towers) {
  if (towers == 0 || tower >= towers) {
    throw Error("tower " + std::to_string(tower) + " is not below towers = " + std::to_string(towers));
  }
  options.rank = options.rank * towers + tower;
  options.world_size = options.world_size * towers;
  return options;
}

}  // namespace sluice
