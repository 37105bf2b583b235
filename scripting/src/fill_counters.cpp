#include "fill_counters.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <new>
#include <string>

#include "sluice/error.h"

namespace sluice::detail {

FillCounters::FillCounters() {
  void* p = ::mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    throw Error(std::string("sluice: cannot map worker counters: ") + std::strerror(errno));
  }
  shared_ = new (p) Shared{};
}

FillCounters::~FillCounters() {
  shared_->~Shared();
  ::munmap(shared_, sizeof(Shared));
}

void FillCounters::add_start(std::uint64_t ns) const {
  shared_->start_ns.fetch_add(ns, std::memory_order_relaxed);
  shared_->workers.fetch_add(1, std::memory_order_relaxed);
}

void FillCounters::add_fill(std::uint64_t ns, std::uint64_t samples) const {
  shared_->fill_ns.fetch_add(ns, std::memory_order_relaxed);
  shared_->batches.fetch_add(1, std::memory_order_relaxed);
  shared_->samples.fetch_add(samples, std::memory_order_relaxed);
}

void FillCounters::add_row_groups_decoded(std::uint64_t n) const {
  if (n > 0) shared_->row_groups_decoded.fetch_add(n, std::memory_order_relaxed);
}

ScriptWorkerTimes FillCounters::totals() const {
  ScriptWorkerTimes t;
  t.start_ns = shared_->start_ns.load(std::memory_order_relaxed);
  t.fill_ns = shared_->fill_ns.load(std::memory_order_relaxed);
  t.batches = shared_->batches.load(std::memory_order_relaxed);
  t.samples = shared_->samples.load(std::memory_order_relaxed);
  t.workers = static_cast<std::uint32_t>(shared_->workers.load(std::memory_order_relaxed));
  t.row_groups_decoded = shared_->row_groups_decoded.load(std::memory_order_relaxed);
  return t;
}

}  // namespace sluice::detail
