// sluice/batch_copy.h: copying bytes into a batch being filled.
//
// A worker writes a batch once and never reads it again: the consumer, in
// another process and often on another core, does. copy_to_batch() therefore
// writes large copies with non-temporal (streaming) stores, which skip the
// worker's caches and the read-for-ownership a normal store pays on a line it
// does not hold. On the project's 2-core VM this raised two workers copying
// streamed records into their slots from 15 to 19-20 GB/s. Copies under 4 KiB,
// and every copy where the CPU has no streaming stores, use memcpy.
//
// Ordering: streaming stores are weakly ordered. A worker fences them
// (store_fence) once after fill() returns, before it reports the batch, so a
// producer needs no fence of its own. Code outside a worker that hands the
// destination to another thread calls store_fence() first.
//
// Thread safety: reentrant.
#pragma once

#include "sluice/export.h"

#include <cstddef>

namespace sluice {

// Copies n bytes from src to dst (a field of a batch being filled). The ranges
// must not overlap.
SLUICE_API void copy_to_batch(void* dst, const void* src, std::size_t n);

// Orders earlier streaming stores before later stores (sfence on x86).
SLUICE_API void store_fence();

}  // namespace sluice
