// worker.h: the loop a worker process runs.
//
// A worker pops Tasks from its ring, computes the batch's sample ids from the
// plan, describes the batch in the slot's header, has the Producer write the
// fields in place, and pushes a Completion. When idle it spins briefly, then
// sleeps on its task ring's futex; it exits when the arena's stop flag is set
// or its parent (the zygote) is gone.
#pragma once

#include <cstdint>

#include "arena.h"
#include "shared_layout.h"
#include "sluice/options.h"
#include "sluice/plan.h"

namespace sluice::detail {

// What a worker needs; built by the parent before the fork and inherited.
struct WorkerEnv {
  const Arena& arena;
  const ArenaLayout& layout;
  const EpochPlan& plan;
  const Options& options;
  int parent_eventfd;  // rung after a completion when the parent sleeps
};

// Runs worker `id` until told to stop; then _exit(0). Never returns.
[[noreturn]] void worker_main(const WorkerEnv& env, std::uint32_t id);

// CLOCK_MONOTONIC in nanoseconds: one clock for every process of the machine.
std::uint64_t monotonic_ns();

// Writes a NUL-terminated copy of message into dst[size], truncated if needed.
void copy_message(char* dst, std::size_t size, const char* message);

inline ArenaHeader& arena_header(const Arena& a) { return *reinterpret_cast<ArenaHeader*>(a.base()); }
inline WorkerChannel& worker_channel(const Arena& a, const ArenaLayout& l, std::uint32_t id) {
  return reinterpret_cast<WorkerChannel*>(a.base() + l.channels_offset)[id];
}
inline SkipList& skip_list(const Arena& a, const ArenaLayout& l) {
  return *reinterpret_cast<SkipList*>(a.base() + l.skip_offset);
}
// Worker id's trace ring; only with Options::trace (layout.trace_offset != 0).
inline TraceRing& trace_ring(const Arena& a, const ArenaLayout& l, std::uint32_t id) {
  return reinterpret_cast<TraceRing*>(a.base() + l.trace_offset)[id];
}
inline std::byte* slot_base(const Arena& a, const ArenaLayout& l, std::uint32_t slot) {
  return a.base() + l.slots_offset + std::uint64_t{slot} * l.slot_bytes;
}

}  // namespace sluice::detail
