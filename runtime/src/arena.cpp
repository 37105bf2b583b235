#include "arena.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <sys/mman.h>
#include <unistd.h>

#include "owned_resources.h"
#include "sluice/error.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

namespace sluice::detail {

namespace {

std::string errno_text() { return std::strerror(errno); }

// Bytes this process could still get: MemAvailable, capped by a cgroup v2
// limit if one applies. Reserving shared memory beyond it would not fail
// cleanly: the kernel would invoke the OOM killer instead.
std::size_t available_memory() {
  std::size_t available = SIZE_MAX;
  if (std::FILE* f = std::fopen("/proc/meminfo", "r")) {
    char line[256];
    while (std::fgets(line, sizeof line, f)) {
      unsigned long long kb = 0;
      if (std::sscanf(line, "MemAvailable: %llu kB", &kb) == 1) available = static_cast<std::size_t>(kb) * 1024;
    }
    std::fclose(f);
  }
  unsigned long long max = 0, current = 0;
  std::FILE* fm = std::fopen("/sys/fs/cgroup/memory.max", "r");
  std::FILE* fc = std::fopen("/sys/fs/cgroup/memory.current", "r");
  if (fm && fc && std::fscanf(fm, "%llu", &max) == 1 && std::fscanf(fc, "%llu", &current) == 1 && max > current) {
    available = std::min<std::size_t>(available, static_cast<std::size_t>(max - current));
  }
  if (fm) std::fclose(fm);
  if (fc) std::fclose(fc);
  return available;
}

}  // namespace

Arena::Arena(std::size_t bytes, const char* name) : size_(bytes) {
  const std::size_t available = available_memory();
  if (bytes > available) {
    throw Error("the arena needs " + std::to_string(bytes) + " bytes (slots x slot_bytes) but only " +
                std::to_string(available) + " bytes of memory are available; lower options.slots or the batch size");
  }
  OwnedLock lock;  // another Loader's zygote must not inherit this fd or mapping
  fd_ = memfd_create(name, MFD_CLOEXEC);
  if (fd_ < 0) throw Error(std::string("memfd_create failed: ") + errno_text());
  auto fail = [&](const std::string& what) {
    std::string message = what + " for a " + std::to_string(bytes) + "-byte arena (slots x slot_bytes): " +
                          errno_text();
    ::close(fd_);
    throw Error(message);
  };
  if (ftruncate(fd_, static_cast<off_t>(bytes)) != 0) fail("ftruncate failed");
  if (fallocate(fd_, 0, 0, static_cast<off_t>(bytes)) != 0) fail("reserving memory (fallocate) failed");
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd_, 0);
  if (p == MAP_FAILED) fail("mmap failed");
  base_ = static_cast<std::byte*>(p);
  register_fd(fd_);
  register_mapping(base_, size_);
}

Arena::~Arena() {
  OwnedLock lock;
  if (base_) {
    unregister_mapping(base_);
    munmap(base_, size_);
  }
  if (fd_ >= 0) {
    unregister_fd(fd_);
    ::close(fd_);
  }
}

void Arena::prefault_in_this_process() const {
  if (madvise(base_, size_, MADV_POPULATE_WRITE) == 0) return;
  // Kernels before 5.14: write to each page (at the kernel's page size, which
  // may be 64 KiB on aarch64). An atomic add of 0 keeps the byte's value and
  // makes the entry writable. It must be atomic: the parent and the other
  // workers may already be writing the arena (ring indices, slot headers),
  // and a plain read, then write, of the byte could undo a store of theirs
  // made in between. (qemu-user accepts MADV_POPULATE_WRITE as a no-op.)
  long page = sysconf(_SC_PAGESIZE);
  for (std::size_t off = 0; off < size_; off += static_cast<std::size_t>(page)) {
    std::atomic_ref<unsigned char>(*reinterpret_cast<unsigned char*>(base_ + off)).fetch_add(0, std::memory_order_relaxed);
  }
}

}  // namespace sluice::detail
