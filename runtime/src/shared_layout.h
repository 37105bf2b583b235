// shared_layout.h: what the parent and its workers share inside the arena.
//
//   offset 0                     ArenaHeader
//   skip_offset                  SkipList (samples dropped by on_error = skip)
//   channels_offset              WorkerChannel[workers]  (task ring + completion ring each)
//   slots_offset                 slot[slots], slot_bytes each, page aligned
//
// A slot starts with a SlotHeader that describes the batch it holds (epoch,
// batch, sample count, and every field's name, dtype, shape, strides, offset
// and size), then the batch's sample ids, then each field's data. The consumer
// needs nothing but the slot to interpret a batch.
//
// Everything here is standard-layout, fixed-size and holds offsets, never
// pointers; the static_asserts below pin that down.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <new>
#include <type_traits>
#include <vector>

#include "doorbell.h"
#include "sluice/options.h"
#include "spsc_ring.h"

namespace sluice::detail {

inline constexpr std::size_t kMaxFields = max_fields;
inline constexpr std::size_t kMaxDims = max_sample_dims + 1;  // including the batch dimension
inline constexpr std::size_t kNameBytes = 48;
inline constexpr std::size_t kErrorBytes = 4096;
inline constexpr std::uint32_t kRingCapacity = 1024;  // also the most slots a loader may have
inline constexpr std::size_t kFieldAlign = 256;       // field data alignment inside a slot
inline constexpr std::uint64_t kArenaMagic = 0x65636975'6c73'0001ULL;

// Parent -> worker: fill `slot` with the batch at global sequence number `seq`
// (epoch = seq / batches_per_epoch, batch = seq % batches_per_epoch).
struct Task {
  std::uint32_t slot;
  std::uint32_t reserved;
  std::uint64_t seq;
};

enum class Status : std::int32_t {
  ok = 0,
  fill_failed = 1,   // the producer threw; message in the slot's SlotHeader::error
  start_failed = 2,  // start_worker threw; message in WorkerChannel::start_error
};

inline constexpr std::uint32_t kNoSlot = 0xffffffffu;

// Worker -> parent: `slot` now holds the batch `seq`, or failed.
struct Completion {
  std::uint32_t slot;
  Status status;
  std::uint64_t seq;
};

inline constexpr std::uint64_t kIdle = ~0ULL;
inline constexpr std::uint32_t kUnknownPosition = ~0u;

struct WorkerChannel {
  SpscRing<Task, kRingCapacity> tasks;         // parent produces, worker consumes
  SpscRing<Completion, kRingCapacity> done;    // worker produces, parent consumes
  // What the worker is doing, for blaming a crash or a hang on a batch and a
  // sample. Written by the worker, read by the parent. busy_seq publishes the
  // others: the worker stores busy_since_ns, alive_ns and busy_position, then
  // busy_seq with release; the watchdog loads busy_seq with acquire, so when
  // it sees a new batch it also sees that batch's busy_since_ns (or newer),
  // never the previous batch's. Relaxed would let a weakly ordered CPU
  // (aarch64) show the new busy_seq with a stale busy_since_ns (0 in a fresh
  // channel) and kill a worker that had just begun. The rest stay relaxed:
  // after the worker's death (on_worker_exit, replace) the kernel orders all
  // its stores before the parent hears of the exit.
  alignas(kCacheLine) std::atomic<std::uint64_t> busy_seq;  // batch being filled, or kIdle
  std::atomic<std::uint64_t> busy_since_ns;                  // CLOCK_MONOTONIC, when it began
  std::atomic<std::uint32_t> busy_position;                  // sample being made, or kUnknownPosition
  // The worker's last sign of life: start-up done, a fill begun or ended. 0
  // while it starts. For the watchdog, which acts only after a whole timeout.
  std::atomic<std::uint64_t> alive_ns;
  // Where the worker's time went, for Stats: written by the worker only,
  // read by the parent whenever; relaxed, since each is a lone counter (the
  // parent sums them for a report, and a sum a batch behind is still true).
  // fill_ns is wall time; of it, cpu_ns was spent on a CPU by the worker
  // process (user + system, every thread) and runqueue_ns waiting for one
  // (runnable, not running: more runnable threads than cores). The rest of a
  // fill was off-CPU: I/O, sleeps, page faults served from disk.
  alignas(kCacheLine) std::atomic<std::uint64_t> fill_ns;
  std::atomic<std::uint64_t> idle_ns;
  std::atomic<std::uint64_t> cpu_ns;
  std::atomic<std::uint64_t> runqueue_ns;
  char start_error[kErrorBytes];
};

// A channel as a fresh worker expects it, built in place (before the fork, or
// after its worker died, when no process touches it).
inline void reset_channel(WorkerChannel* where) {
  auto* ch = new (where) WorkerChannel{};
  ch->busy_seq.store(kIdle, std::memory_order_relaxed);
  ch->busy_position.store(kUnknownPosition, std::memory_order_relaxed);
}

// Samples dropped by the on_error = skip policy. Only the parent appends: it
// writes ids[count] and then publishes with a release store of count; a
// worker loads count with acquire before reading ids below it. Append-only, so
// a reader never sees an entry change. Entries not yet written hold
// kNotASample, which no sample id equals: a producer that scribbles count
// (user code writing where it must not) makes a worker read those, never
// drop a good sample.
inline constexpr std::size_t kMaxSkipped = 16384;
inline constexpr std::uint64_t kNotASample = ~std::uint64_t{0};
struct SkipList {
  alignas(kCacheLine) std::atomic<std::uint32_t> count;
  std::uint64_t ids[kMaxSkipped];
};

// An empty list, built in place before the fork.
inline void reset_skip_list(SkipList* where) {
  auto* list = new (where) SkipList{};
  std::fill(std::begin(list->ids), std::end(list->ids), kNotASample);
}

// With Options::trace, each worker's last kTraceEvents fills, for the trace
// (trace.cpp). One ring per worker, written by that worker only, read by the
// parent at any time (the run may still go on), so each entry is a seqlock of
// its own: the worker stores tag = 2i+1 (odd: being written), a release
// fence, the fields (relaxed), then tag = 2i+2 with release, and only then
// count = i+1 with release. The parent loads count with acquire and, per
// entry, tag with acquire, the fields relaxed, an acquire fence, and tag
// again: an entry whose two tags differ, are odd or are not 2i+2 was being
// overwritten and is left out. The fields are atomics, so a torn read is a
// stale value that the tag check rejects, never undefined behaviour; on x86
// all of it compiles to plain loads and stores.
inline constexpr std::uint32_t kTraceEvents = 4096;
struct TraceEntry {
  std::atomic<std::uint64_t> tag;
  std::atomic<std::uint64_t> start_ns;  // CLOCK_MONOTONIC
  std::atomic<std::uint64_t> end_ns;
  std::atomic<std::uint64_t> seq;       // the batch (epoch * batches_per_epoch + batch)
  std::atomic<std::uint64_t> samples;   // low 32 bits: samples; bit 32: the fill failed
};
struct TraceRing {
  alignas(kCacheLine) std::atomic<std::uint64_t> count;  // fills recorded since the worker began
  TraceEntry entries[kTraceEvents];
};

struct ArenaHeader {
  std::uint64_t magic;
  // Set once by the parent to stop every worker (relaxed is enough: workers
  // only need to see it eventually, and it guards no data).
  alignas(kCacheLine) std::atomic<std::uint32_t> stop;
  // The parent arms this before sleeping on its eventfd; a worker that pushed
  // a completion, or a thread that released a batch, rings the eventfd only
  // if it is armed (doorbell.h).
  alignas(kCacheLine) Doorbell parent_sleeping;
  // Whether a worker waiting for a task polls its ring a while before it
  // sleeps (worker.cpp): 1 while the parent and the active workers each
  // have a core of this process's CPUs, 0 when they would share them, as a
  // polling worker then takes the core the consumer or a busy worker needs.
  // Set by the parent before the fork and whenever the active workers change
  // (relaxed: a hint read at each wait; a stale value costs speed, never
  // correctness).
  alignas(kCacheLine) std::atomic<std::uint32_t> workers_poll;
};

struct FieldDesc {
  char name[kNameBytes];
  std::uint32_t dtype;
  std::uint32_t ndim;
  std::int64_t shape[kMaxDims];
  std::int64_t strides[kMaxDims];  // elements
  std::uint64_t offset;            // from the slot's start
  std::uint64_t nbytes;
};

struct SlotHeader {
  std::uint64_t epoch;
  std::uint64_t batch;
  std::uint64_t seq;
  std::uint32_t size;         // samples in the batch
  std::uint32_t field_count;
  std::uint32_t worker;
  std::int32_t status;
  std::uint32_t failed_position;  // with fill_failed: the sample being made, or kUnknownPosition
  std::uint32_t reserved;
  std::uint64_t ids_offset;   // from the slot's start: size x uint64 sample ids
  FieldDesc fields[kMaxFields];
  char error[kErrorBytes];
};

static_assert(std::is_standard_layout_v<SpscRing<Task, kRingCapacity>>);
static_assert(std::is_standard_layout_v<WorkerChannel>);
static_assert(std::is_standard_layout_v<ArenaHeader>);
static_assert(std::is_standard_layout_v<SkipList>);
static_assert(std::is_standard_layout_v<TraceRing>);
static_assert(std::atomic<std::uint64_t>::is_always_lock_free);
static_assert(std::is_trivially_copyable_v<SlotHeader> && std::is_standard_layout_v<SlotHeader>);
static_assert(sizeof(Task) == 16 && sizeof(Completion) == 16);
static_assert(alignof(WorkerChannel) == kCacheLine && sizeof(WorkerChannel) % kCacheLine == 0);

// Where everything sits, computed once in the parent from the options, before
// the fork; workers read their copy. Process-local, never in shared memory.
struct ArenaLayout {
  std::uint32_t workers = 0;        // worker channels: options.workers, or the most auto may grow to
  std::uint32_t start_workers = 0;  // workers forked at the start
  std::uint32_t slots = 0;
  std::uint64_t skip_offset = 0;
  std::uint64_t channels_offset = 0;
  std::uint64_t trace_offset = 0;  // TraceRing[workers], with Options::trace; else 0
  std::uint64_t slots_offset = 0;
  std::uint64_t slot_bytes = 0;
  std::uint64_t total_bytes = 0;
  // Inside a slot:
  std::uint64_t ids_offset = 0;
  std::vector<std::uint64_t> field_offsets;
  std::vector<std::size_t> sample_bytes;  // bytes of one sample of each field
  std::uint64_t needed_slot_bytes = 0;    // what a full batch needs

  // Validates the fields and sizes; throws Error naming the option to change.
  static ArenaLayout compute(const Options& options);
};

// The descriptions of a batch's fields, out[0, options.fields.size()), for a
// batch of `size` samples: what a worker writes into its slot's header, and
// what the parent checks that header against. Every one is a function of the
// options and the size.
void describe_fields(FieldDesc* out, const Options& options, const ArenaLayout& layout, std::uint32_t size);

// The parent's private copy of a delivered slot's header, made from the
// options and checked against the slot: what a Batch and its DLPack tensors
// read, so that nothing written into the slot after delivery changes a
// shape, a dtype or a name under them.
struct BatchHeader {
  std::uint64_t epoch = 0;
  std::uint64_t batch = 0;
  std::uint32_t size = 0;
  std::uint32_t field_count = 0;
  std::uint64_t ids_offset = 0;
  FieldDesc fields[kMaxFields];
};

}  // namespace sluice::detail
