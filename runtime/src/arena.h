// arena.h: the shared-memory arena every batch lives in.
//
// Backed by memfd_create, so nothing appears under /dev/shm (no Docker
// --shm-size limit, nothing left behind by a crash: the memory is freed when
// the last process holding the mapping exits). The whole size is reserved with
// fallocate (a short machine fails here with a clear error, not later with
// SIGBUS) and mapped MAP_SHARED | MAP_POPULATE, so the hot path never touches a
// fresh page. Created before the workers are forked, it sits at the same
// address in every process; still, shared structures hold offsets, never pointers.
#pragma once

#include <cstddef>

namespace sluice::detail {

class Arena {
 public:
  Arena(std::size_t bytes, const char* name);  // throws Error
  ~Arena();
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;

  std::byte* base() const { return base_; }
  std::size_t size() const { return size_; }
  int fd() const { return fd_; }

  // Maps every page of the arena into this process's page table for writing
  // (a forked child inherits the mapping but not the page-table entries of a
  // shared mapping), so its first batch pays no page faults.
  void prefault_in_this_process() const;

 private:
  int fd_ = -1;
  std::byte* base_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace sluice::detail
