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
//
// The pthread_atfork handlers below take the mutex around every fork of the
// process (the host's os.fork, subprocess, a Loader's zygote): a fork never
// copies the registry in the middle of a change, and the child starts with
// the mutex new and free, whichever thread held it. So no code may fork
// while it holds the mutex (an OwnedLock).
struct Registry {
  pthread_mutex_t mutex;
  std::vector<int> fds;
  std::vector<Mapping> mappings;
};

std::atomic<std::uint64_t> forks{0};

void init_mutex(pthread_mutex_t* m) { pthread_mutex_init(m, nullptr); }

Registry& registry();
void lock_before_fork() { pthread_mutex_lock(&registry().mutex); }
void unlock_in_parent() { pthread_mutex_unlock(&registry().mutex); }
// The child's only thread: a new mutex (the copy is held by the prepare
// handler, which never returns there), and one more fork.
void reset_in_child() {
  init_mutex(&registry().mutex);
  forks.fetch_add(1, std::memory_order_relaxed);
}

Registry& registry() {
  static Registry* r = [] {
    auto* made = new Registry;
    init_mutex(&made->mutex);
    return made;
  }();
  static const bool handlers = pthread_atfork(lock_before_fork, unlock_in_parent, reset_in_child) == 0;
  (void)handlers;  // without them (ENOMEM): a racing fork may copy a held lock, as before they existed
  return *r;
}

}  // namespace

OwnedLock::OwnedLock() : mutex_(&registry().mutex) { pthread_mutex_lock(mutex_); }
OwnedLock::~OwnedLock() { pthread_mutex_unlock(mutex_); }

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
  // What is released is forgotten too, so that a Loader made later in this
  // process (in a worker) never closes a number that was reused meanwhile.
  Registry& r = registry();
  auto kept_fd = [&](int fd) { return std::find(keep_fds.begin(), keep_fds.end(), fd) != keep_fds.end(); };
  for (int fd : r.fds) {
    if (!kept_fd(fd)) close(fd);
  }
  r.fds.erase(std::remove_if(r.fds.begin(), r.fds.end(), [&](int fd) { return !kept_fd(fd); }), r.fds.end());
  for (const Mapping& m : r.mappings) {
    if (m.base != keep_mapping) munmap(m.base, m.size);
  }
  r.mappings.erase(std::remove_if(r.mappings.begin(), r.mappings.end(),
                                  [&](const Mapping& m) { return m.base != keep_mapping; }),
                   r.mappings.end());
}

std::uint64_t fork_generation() {
  registry();  // the fork handlers count from the first use on
  return forks.load(std::memory_order_relaxed);
}

}  // namespace sluice::detail
