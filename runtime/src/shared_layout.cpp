#include "shared_layout.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <unistd.h>

#include "sluice/error.h"

namespace sluice::detail {

namespace {

// Sizes come from options a script or a user typed: every sum and product is
// checked, and anything past 2^62 bytes is refused before it sizes a buffer.
constexpr std::uint64_t kMaxBytes = 1ULL << 62;

[[noreturn]] void too_large(const std::string& what) {
  throw OptionsError(what + " needs more than 2^62 bytes; check its shape and options.batch_size");
}

std::uint64_t mul(std::uint64_t a, std::uint64_t b, const std::string& what) {
  std::uint64_t r;
  if (__builtin_mul_overflow(a, b, &r) || r > kMaxBytes) too_large(what);
  return r;
}

std::uint64_t add(std::uint64_t a, std::uint64_t b, const std::string& what) {
  std::uint64_t r;
  if (__builtin_add_overflow(a, b, &r) || r > kMaxBytes) too_large(what);
  return r;
}

std::uint64_t align_up(std::uint64_t x, std::uint64_t a) { return (x + a - 1) / a * a; }

}  // namespace

ArenaLayout ArenaLayout::compute(const Options& o) {
  if (o.fields.empty()) throw OptionsError("options.fields is empty: a batch needs at least one field");
  if (o.fields.size() > kMaxFields) {
    throw OptionsError("options.fields has " + std::to_string(o.fields.size()) + " fields; a batch holds at most " +
                std::to_string(kMaxFields) + ": gather several into one array field");
  }
  ArenaLayout l;
  l.workers = std::max(o.workers, o.max_workers);
  l.start_workers = o.workers;
  l.slots = o.slots != 0 ? o.slots : 2 * l.workers + 2;
  if (o.workers == 0) throw OptionsError("options.workers is 0: at least one worker is needed");
  if (l.workers > kMaxWorkers) {
    throw OptionsError(std::string(o.max_workers > o.workers ? "options.max_workers" : "options.workers") + " is " +
                std::to_string(l.workers) + "; at most " + std::to_string(kMaxWorkers) + " are supported");
  }
  if (l.slots > kRingCapacity) {
    throw OptionsError("options.slots is " + std::to_string(l.slots) + "; at most " +
                std::to_string(kRingCapacity) + " are supported");
  }

  l.ids_offset = align_up(sizeof(SlotHeader), kCacheLine);
  std::uint64_t cursor = l.ids_offset + std::uint64_t{o.batch_size} * sizeof(std::uint64_t);  // < 2^36
  for (const FieldSpec& f : o.fields) {
    if (f.name.empty() || f.name.size() >= kNameBytes) {
      throw OptionsError("field name '" + f.name + "' must have 1 to " + std::to_string(kNameBytes - 1) +
                  " characters");
    }
    if (&f != &o.fields.front() &&
        std::any_of(o.fields.data(), &f, [&](const FieldSpec& before) { return before.name == f.name; }))
      throw OptionsError("two fields are named '" + f.name + "': a batch's fields are found by name");
    if (static_cast<unsigned>(f.dtype) > static_cast<unsigned>(DType::boolean))
      throw OptionsError("field '" + f.name + "' has dtype " + std::to_string(static_cast<unsigned>(f.dtype)) +
                  ", which is none of Sluice's (0 to " + std::to_string(static_cast<unsigned>(DType::boolean)) +
                  ": uint8 to bool, sluice/dtype.h)");
    if (f.shape.size() + 1 > kMaxDims) {
      throw OptionsError("field '" + f.name + "' has " + std::to_string(f.shape.size()) +
                  " dimensions; at most " + std::to_string(kMaxDims - 1) + " per sample");
    }
    const std::string what = "field '" + f.name + "'";
    std::uint64_t bytes = dtype_size(f.dtype);
    for (std::int64_t d : f.shape) {
      if (d <= 0) throw OptionsError(what + " has a dimension of " + std::to_string(d));
      bytes = mul(bytes, static_cast<std::uint64_t>(d), what);
    }
    cursor = align_up(cursor, kFieldAlign);
    l.field_offsets.push_back(cursor);
    l.sample_bytes.push_back(bytes);
    cursor = add(cursor, mul(o.batch_size, bytes, what), "a batch of " + std::to_string(o.batch_size) + " samples");
  }
  const std::uint64_t page = static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
  l.needed_slot_bytes = cursor;
  if (o.slot_bytes == 0) {
    l.slot_bytes = align_up(cursor, page);
  } else {
    if (o.slot_bytes < cursor) {
      throw OptionsError("a batch of " + std::to_string(o.batch_size) + " samples needs " + std::to_string(cursor) +
                  " bytes per slot but options.slot_bytes is " + std::to_string(o.slot_bytes) +
                  "; raise options.slot_bytes to at least " + std::to_string(cursor) + " (or set it to 0)");
    }
    l.slot_bytes = align_up(o.slot_bytes, page);
  }

  if (l.workers > l.start_workers && o.slots == 0) {
    // Auto: 2 slots per worker it may grow to, plus 2, within the memory
    // budget; the budget lowers that maximum rather than starve the workers.
    const std::uint64_t budget_slots = (o.memory_budget_mb << 20) / l.slot_bytes;
    const std::uint32_t least = 2 * l.start_workers + 2;
    l.slots = static_cast<std::uint32_t>(std::clamp<std::uint64_t>(budget_slots, least, l.slots));
    l.workers = std::max(l.start_workers, (l.slots - 2) / 2);
  }

  l.skip_offset = align_up(sizeof(ArenaHeader), kCacheLine);
  l.channels_offset = align_up(l.skip_offset + sizeof(SkipList), kCacheLine);
  std::uint64_t end = l.channels_offset + std::uint64_t{l.workers} * sizeof(WorkerChannel);
  if (o.trace) {
    l.trace_offset = align_up(end, kCacheLine);
    end = l.trace_offset + std::uint64_t{l.workers} * sizeof(TraceRing);
  }
  l.slots_offset = align_up(end, page);
  l.total_bytes = add(l.slots_offset, mul(l.slots, l.slot_bytes, "the arena"), "the arena");
  return l;
}

void describe_fields(FieldDesc* out, const Options& options, const ArenaLayout& layout, std::uint32_t size) {
  for (std::size_t f = 0; f < options.fields.size(); ++f) {
    const FieldSpec& spec = options.fields[f];
    FieldDesc& d = out[f];
    const std::size_t n = std::min(spec.name.size(), sizeof d.name - 1);
    std::memcpy(d.name, spec.name.data(), n);
    std::memset(d.name + n, 0, sizeof d.name - n);
    d.dtype = static_cast<std::uint32_t>(spec.dtype);
    d.ndim = static_cast<std::uint32_t>(spec.shape.size() + 1);
    d.shape[0] = size;
    for (std::size_t k = 0; k < spec.shape.size(); ++k) d.shape[k + 1] = spec.shape[k];
    std::int64_t stride = 1;
    for (std::size_t k = d.ndim; k-- > 0;) {
      d.strides[k] = stride;
      stride *= d.shape[k];
    }
    d.offset = layout.field_offsets[f];
    d.nbytes = std::uint64_t{size} * layout.sample_bytes[f];
  }
}

}  // namespace sluice::detail
