#include "fill_counters.h"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>
#include <string>

#include "sluice/error.h"

namespace sluice::detail {

static std::size_t mapping_bytes(std::size_t shared, std::size_t download, std::size_t count) {
  return shared + download * count;
}

FillCounters::FillCounters() {
  const std::size_t bytes = mapping_bytes(sizeof(Shared), sizeof(Download), kDownloads);
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    throw Error(std::string("sluice: cannot map worker counters: ") + std::strerror(errno));
  }
  shared_ = new (p) Shared{};
  download_ = reinterpret_cast<Download*>(static_cast<char*>(p) + sizeof(Shared));
  for (std::uint64_t i = 0; i < kDownloads; ++i) new (&download_[i]) Download{};
}

FillCounters::~FillCounters() {
  shared_->~Shared();
  ::munmap(shared_, mapping_bytes(sizeof(Shared), sizeof(Download), kDownloads));
}

// The remote counts summed over workers: each Shared counter with its field.
const FillCounters::RemoteSum FillCounters::kRemoteSums[] = {
    {&Shared::hits, &ScriptRemoteStats::hits},
    {&Shared::misses, &ScriptRemoteStats::misses},
    {&Shared::evictions, &ScriptRemoteStats::evictions},
    {&Shared::requests, &ScriptRemoteStats::requests},
    {&Shared::retries, &ScriptRemoteStats::retries},
    {&Shared::bytes, &ScriptRemoteStats::bytes},
    {&Shared::wait_ns, &ScriptRemoteStats::wait_ns},
    {&Shared::worker_wait_ns, &ScriptRemoteStats::worker_wait_ns},
};

void FillCounters::add_remote(const ScriptRemoteStats& d, std::uint64_t over_budget) const {
  for (const RemoteSum& sum : kRemoteSums) (shared_->*sum.counter).fetch_add(d.*sum.field, std::memory_order_relaxed);
  std::uint64_t seen = shared_->over_budget.load(std::memory_order_relaxed);
  while (over_budget > seen && !shared_->over_budget.compare_exchange_weak(seen, over_budget, std::memory_order_relaxed)) {
  }
}

// A slot is claimed once (fetch_add), its fields written, then `object`
// published with release; remote_totals() acquires it before reading them.
void FillCounters::add_download(std::uint32_t object, std::uint64_t start_ns, std::uint64_t end_ns,
                                std::uint64_t bytes) const {
  const std::uint64_t i = shared_->downloads.fetch_add(1, std::memory_order_relaxed);
  if (i >= kDownloads) return;
  Download& d = download_[i];
  d.start_ns.store(start_ns, std::memory_order_relaxed);
  d.end_ns.store(end_ns, std::memory_order_relaxed);
  d.bytes.store(bytes, std::memory_order_relaxed);
  d.object.store(static_cast<std::uint64_t>(object) + 1, std::memory_order_release);
}

ScriptRemoteStats FillCounters::remote_totals() const {
  ScriptRemoteStats r;
  for (const RemoteSum& sum : kRemoteSums) r.*sum.field = (shared_->*sum.counter).load(std::memory_order_relaxed);
  r.over_budget = shared_->over_budget.load(std::memory_order_relaxed);
  const std::uint64_t n = std::min(shared_->downloads.load(std::memory_order_relaxed), kDownloads);
  for (std::uint64_t i = 0; i < n; ++i) {
    const Download& d = download_[i];
    const std::uint64_t object = d.object.load(std::memory_order_acquire);
    if (object == 0) continue;
    r.downloads.push_back({std::to_string(object - 1), d.start_ns.load(std::memory_order_relaxed),
                           d.end_ns.load(std::memory_order_relaxed), d.bytes.load(std::memory_order_relaxed)});
  }
  return r;
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

void FillCounters::add_parquet(std::uint64_t groups_decoded, std::uint64_t rows_gathered) const {
  if (groups_decoded > 0) shared_->row_groups_decoded.fetch_add(groups_decoded, std::memory_order_relaxed);
  if (rows_gathered > 0) shared_->parquet_rows_gathered.fetch_add(rows_gathered, std::memory_order_relaxed);
}

ScriptWorkerTimes FillCounters::totals() const {
  ScriptWorkerTimes t;
  t.start_ns = shared_->start_ns.load(std::memory_order_relaxed);
  t.fill_ns = shared_->fill_ns.load(std::memory_order_relaxed);
  t.batches = shared_->batches.load(std::memory_order_relaxed);
  t.samples = shared_->samples.load(std::memory_order_relaxed);
  t.workers = static_cast<std::uint32_t>(shared_->workers.load(std::memory_order_relaxed));
  t.row_groups_decoded = shared_->row_groups_decoded.load(std::memory_order_relaxed);
  t.parquet_rows_gathered = shared_->parquet_rows_gathered.load(std::memory_order_relaxed);
  return t;
}

}  // namespace sluice::detail
