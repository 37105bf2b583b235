// sluice/cuda/device.h: where staged batches are delivered, by name.
//
//   "cpu"     host memory (the host backend)
//   "cuda"    this process's CUDA device: its local rank (from torchrun, Open
//             MPI, PMI or SLURM; see sluice/launcher.h) modulo the device count,
//             so the ranks of a node spread over its GPUs; device 0 when not
//             launched that way
//   "cuda:N"  CUDA device N
//   "auto"    as "cuda" when a device exists, otherwise host memory, with a
//             note saying so
//
// The same strings are accepted by StageOptions::device and by `device` in a
// pipeline.lua.
//
// Thread safety: every function here may be called from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace sluice::cuda {

enum class DeviceKind : std::uint8_t { cpu, cuda };

// A concrete device.
struct DeviceSpec {
  DeviceKind kind = DeviceKind::cpu;
  int ordinal = 0;  // CUDA device number; 0 for the cpu
};

// A parsed device string: a concrete device, or "auto".
struct DeviceRequest {
  bool automatic = false;      // "auto": spec is cuda, to be used if a device exists
  bool by_local_rank = false;  // "cuda" or "auto": the ordinal comes from the local rank
  DeviceSpec spec;
};

// A request resolved against the devices of this machine.
struct ResolvedDevice {
  DeviceSpec spec;
  std::string note;  // non-empty when "auto" fell back to the cpu: why
};

// Parses "cpu", "cuda", "cuda:N" or "auto". Throws Error naming the text otherwise.
DeviceRequest parse_device(std::string_view text);

// "cpu" or "cuda:N".
std::string to_string(DeviceSpec spec);

// Number of CUDA devices visible to this process; 0 when there is no device or
// no usable driver, in which case *why_none (if given) receives the CUDA
// runtime's reason. Never throws.
int cuda_device_count(std::string* why_none = nullptr);

// cuda_device_count() > 0.
bool device_available();

// The device a process of local rank `local_rank` uses among `count` devices.
int device_for_local_rank(std::uint32_t local_rank, int count);

// Parses `text` and checks it against this machine: "cuda" or "cuda:N" without
// that device throws Error (one message naming the request and the reason);
// "auto" without a device resolves to the cpu with a note.
ResolvedDevice resolve_device(std::string_view text);

}  // namespace sluice::cuda
