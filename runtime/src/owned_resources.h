// owned_resources.h: what every Loader of this process owns that a forked
// child must not keep.
//
// fork() without exec ignores O_CLOEXEC, so a zygote forked for one Loader
// would inherit every other Loader's socket, eventfd and memfd, and map its
// arena. A zygote that holds another Loader's socket keeps that Loader's own
// zygote from seeing EOF, and an inherited arena keeps its memory alive after
// its Loader is gone. So the runtime registers each such fd and mapping here,
// and a freshly forked zygote drops all of them except its own Loader's.
//
// The user's own fds are not touched: a producer may read through a file, an
// LMDB or HDF5 handle opened before the loader, as PyTorch's workers allow.
//
// Thread safety: the registry is changed under one process-wide mutex, and
// every creation of an owned fd or mapping happens under it too (OwnedLock).
// pthread_atfork handlers take it around every fork of the process, a
// zygote's included (so nothing may fork while holding it). So a fork never
// sees a resource that exists but is not yet registered, and the child, whose
// only thread is the one that forked, starts with a fresh, free mutex: a
// Loader made in a worker, or in a child the host forked while another thread
// was making a Loader, does not deadlock.
//
// The other side of the same rule: a child forked while a Loader exists (the
// zygote of another Loader and its workers, or the host's own fork: Python's
// multiprocessing, a trainer spawning a tool) holds a copy of that Loader and
// of its batches. Destroying the copy there must not stop the parent's
// workers, close descriptors whose numbers the child has reused, or touch an
// arena the child no longer maps. fork_generation() tells such a copy apart.
#pragma once

#include <cstddef>
#include <cstdint>
#include <pthread.h>
#include <span>

namespace sluice::detail {

// Held while creating and registering an owned resource, or unregistering
// and closing it; never across a fork.
class OwnedLock {
 public:
  OwnedLock();
  ~OwnedLock();
  OwnedLock(const OwnedLock&) = delete;
  OwnedLock& operator=(const OwnedLock&) = delete;

 private:
  pthread_mutex_t* mutex_;
};

// The caller holds an OwnedLock across creating and registering a resource,
// and across unregistering and closing it, so no fork falls in between.
void register_fd(int fd);
void unregister_fd(int fd);
void register_mapping(void* base, std::size_t size);
void unregister_mapping(void* base);

// In a child right after fork: closes every registered fd not in keep_fds and
// unmaps every registered mapping other than keep_mapping, and forgets them.
// Async-signal-safe (close, munmap, and vector erasure that never allocates).
void release_others_after_fork(std::span<const int> keep_fds, const void* keep_mapping);

// How many forks separate this process from the process that first called
// this function (a pthread_atfork child handler counts them). An object that
// records it when it is made belongs to an ancestor wherever it differs.
// Lock-free and cheap: a relaxed load (the handler runs in the child's only
// thread before fork() returns there, so no other thread can observe a
// change).
std::uint64_t fork_generation();

}  // namespace sluice::detail
