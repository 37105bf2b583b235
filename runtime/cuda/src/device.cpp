#include "sluice/cuda/device.h"

#include <cuda_runtime_api.h>

#include <charconv>
#include <string>

#include "cuda_check.h"
#include "sluice/error.h"
#include "sluice/launcher.h"

namespace sluice::cuda {

namespace {

[[noreturn]] void bad_device(std::string_view text) {
  throw Error("device = \"" + std::string(text) +
              "\" is not a device: expected \"cpu\", \"cuda\", \"cuda:N\" or \"auto\"");
}

}  // namespace

DeviceRequest parse_device(std::string_view text) {
  if (text == "cpu") return {false, false, {DeviceKind::cpu, 0}};
  if (text == "auto") return {true, true, {DeviceKind::cuda, 0}};
  if (text == "cuda") return {false, true, {DeviceKind::cuda, 0}};
  constexpr std::string_view prefix = "cuda:";
  if (!text.starts_with(prefix)) bad_device(text);
  const std::string_view digits = text.substr(prefix.size());
  int ordinal = -1;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), ordinal);
  if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size() || ordinal < 0) {
    bad_device(text);
  }
  return {false, false, {DeviceKind::cuda, ordinal}};
}

int device_for_local_rank(std::uint32_t local_rank, int count) {
  return count > 0 ? static_cast<int>(local_rank % static_cast<std::uint32_t>(count)) : 0;
}

std::string to_string(DeviceSpec spec) {
  return spec.kind == DeviceKind::cpu ? "cpu" : "cuda:" + std::to_string(spec.ordinal);
}

int cuda_device_count(std::string* why_none) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    (void)cudaGetLastError();  // not sticky; clear it for the caller's next check
    if (why_none) *why_none = "cudaGetDeviceCount: " + detail::cuda_error_text(status);
    return 0;
  }
  if (count == 0 && why_none) *why_none = "cudaGetDeviceCount: 0 devices";
  return count;
}

bool device_available() { return cuda_device_count() > 0; }

ResolvedDevice resolve_device(std::string_view text) {
  DeviceRequest request = parse_device(text);
  if (request.spec.kind == DeviceKind::cpu) return {request.spec, {}};
  std::string why;
  const int count = cuda_device_count(&why);
  if (request.by_local_rank) request.spec.ordinal = device_for_local_rank(detect_launch().local_rank, count);
  if (request.automatic) {
    if (count > 0) return {request.spec, {}};
    return {{DeviceKind::cpu, 0},
            "device = \"auto\": no CUDA device (" + why + "); batches are delivered in host memory"};
  }
  if (count == 0) {
    throw Error("device = \"" + std::string(text) + "\": no CUDA device (" + why + ")");
  }
  if (request.spec.ordinal >= count) {
    throw Error("device = \"" + std::string(text) + "\": no such CUDA device; this machine has " +
                std::to_string(count) + (count == 1 ? " device" : " devices"));
  }
  return {request.spec, {}};
}

}  // namespace sluice::cuda
