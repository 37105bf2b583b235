#include "ffi_api.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "half.h"

namespace sluice::scripting {
namespace {

std::uint64_t ffi_rng_key(std::uint64_t seed, std::uint64_t domain, std::uint64_t epoch,
                          std::uint64_t index) noexcept {
  return rng_key(seed, domain, epoch, index);
}
std::uint64_t ffi_rng_next(CounterRng* rng) noexcept { return rng_next(*rng); }
double ffi_rng_uniform(CounterRng* rng) noexcept { return rng_uniform(*rng); }
double ffi_rng_normal(CounterRng* rng) noexcept { return rng_normal(*rng); }
std::uint16_t ffi_f32_to_f16(float x) noexcept { return float_to_half(x); }
float ffi_f16_to_f32(std::uint16_t h) noexcept { return half_to_float(h); }
std::uint16_t ffi_f32_to_bf16(float x) noexcept { return float_to_bfloat16(x); }
float ffi_bf16_to_f32(std::uint16_t b) noexcept { return bfloat16_to_float(b); }

std::int64_t ffi_file_size(const char* path) noexcept {
  struct stat st;
  if (::stat(path, &st) != 0) return -errno;
  if (!S_ISREG(st.st_mode)) return -EISDIR;
  return st.st_size;
}

std::int64_t ffi_read_file(const char* path, void* dst, std::uint64_t capacity) noexcept {
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -errno;
  auto* out = static_cast<char*>(dst);
  std::uint64_t total = 0;
  std::int64_t result = 0;
  for (;;) {
    char probe;
    const bool full = total == capacity;
    const ssize_t n = full ? ::read(fd, &probe, 1) : ::read(fd, out + total, capacity - total);
    if (n < 0) {
      if (errno == EINTR) continue;
      result = -errno;
      break;
    }
    if (n == 0) {
      result = static_cast<std::int64_t>(total);
      break;
    }
    if (full) {
      result = -EFBIG;
      break;
    }
    total += static_cast<std::uint64_t>(n);
  }
  ::close(fd);
  return result;
}

void* ffi_alloc(std::uint64_t bytes) noexcept {
  const std::uint64_t rounded = (bytes + 63) / 64 * 64;
  return std::aligned_alloc(64, rounded == 0 ? 64 : rounded);
}
void ffi_release(void* p) noexcept { std::free(p); }
const char* ffi_error_string(std::int64_t code) noexcept {
  return std::strerror(static_cast<int>(-code));
}

constexpr sluice_ffi_api kApi = {
    ffi_rng_key,    ffi_rng_next,    ffi_rng_uniform, ffi_rng_normal, ffi_f32_to_f16,
    ffi_f16_to_f32, ffi_f32_to_bf16, ffi_bf16_to_f32, ffi_file_size,  ffi_read_file,
    ffi_alloc,      ffi_release,     ffi_error_string,
};

}  // namespace

const sluice_ffi_api& ffi_api() { return kApi; }

}  // namespace sluice::scripting
