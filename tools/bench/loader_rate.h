// loader_rate.h: a pipeline's rate as its consumer sees it, for benchmarks
// that run a real sluice::Loader (text_bench, parquet_bench).
//
// Thread safety: the Loader's (one consumer thread).
#pragma once

#include <cstdint>

#include "harness.h"
#include "sluice/loader.h"

namespace sluice::bench {

// The items of every batch left in `loader` (count(batch): the batch's
// items), the consumer touching every page of every field of every batch.
template <typename Count>
double drain_items(Loader& loader, Count count) {
  double items = 0;
  std::uint64_t sum = 0;
  while (auto batch = loader.next()) {
    items += count(*batch);
    for (std::size_t f = 0; f < batch->field_count(); ++f)
      sum += touch_pages(batch->field(f).data, batch->field(f).nbytes);
  }
  keep(sum);
  return items;
}

// Items per second out of `loader` until it ends, as drain_items; the first
// batch (the workers' start) is taken untimed.
template <typename Count>
double loader_rate(Loader& loader, Count count) {
  loader.next();
  const Stopwatch clock;
  const double items = drain_items(loader, count);
  return items / clock.seconds();
}

}  // namespace sluice::bench
