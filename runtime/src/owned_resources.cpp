#include "owned_resources.h"

#include <algorithm>
#include <atomic>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>
#include <vector>

namespace sluice::detail {

namespace {

struct Mapping {
  void* base;
  std::size_t size;
};

// Leaked on purpose: Loaders may outlive static destruction order.
struct Registry {
  std::mutex mutex;
  std::vector<int> fds;
  std::vector<Mapping> mappings;
};

Registry& registry() {
  static Registry* r = new Registry;
  return *r;
}

std::atomic<std::uint64_t> forks{0};

void count_fork_in_child() { forks.fetch_add(1, std::memory_order_relaxed); }

}  // namespace

OwnedLock::OwnedLock() : lock_(registry().mutex) {}
OwnedLock::~OwnedLock() = default;

void register_fd(int fd) {
  if (fd >= 0) registry().fds.push_back(fd);
}

void unregister_fd(int fd) {
  auto& fds = registry().fds;
  fds.erase(std::remove(fds.begin(), fds.end(), fd), fds.end());
}

void register_mapping(void* base, std::size_t size) { registry().mappings.push_back({base, size}); }

void unregister_mapping(void* base) {
  auto& m = registry().mappings;
  m.erase(std::remove_if(m.begin(), m.end(), [&](const Mapping& x) { return x.base == base; }), m.end());
}

void release_others_after_fork(std::span<const int> keep_fds, const void* keep_mapping) {
  const Registry& r = registry();
  for (int fd : r.fds) {
    if (std::find(keep_fds.begin(), keep_fds.end(), fd) == keep_fds.end()) close(fd);
  }
  for (const Mapping& m : r.mappings) {
    if (m.base != keep_mapping) munmap(m.base, m.size);
  }
}

std::uint64_t fork_generation() {
  static const bool counting = pthread_atfork(nullptr, nullptr, count_fork_in_child) == 0;
  (void)counting;  // without the handler (ENOMEM), every object looks local, as before
  return forks.load(std::memory_order_relaxed);
}

}  // namespace sluice::detail
