#include "shared_layout.h"

#include <string>
#include <unistd.h>

#include "sluice/error.h"

namespace sluice::detail {

namespace {
std::uint64_t align_up(std::uint64_t x, std::uint64_t a) { return (x + a - 1) / a * a; }
}  // namespace

ArenaLayout ArenaLayout::compute(const Options& o) {
  if (o.fields.empty()) throw Error("options.fields is empty: a batch needs at least one field");
  if (o.fields.size() > kMaxFields) {
    throw Error("options.fields has " + std::to_string(o.fields.size()) + " fields; at most " +
                std::to_string(kMaxFields) + " are supported");
  }
  ArenaLayout l;
  l.workers = o.workers;
  l.slots = o.slots != 0 ? o.slots : 2 * o.workers + 2;
  if (l.workers == 0) throw Error("options.workers is 0: at least one worker is needed");
  if (l.slots > kRingCapacity) {
    throw Error("options.slots is " + std::to_string(l.slots) + "; at most " +
                std::to_string(kRingCapacity) + " are supported");
  }

  l.ids_offset = align_up(sizeof(SlotHeader), kCacheLine);
  std::uint64_t cursor = l.ids_offset + std::uint64_t{o.batch_size} * sizeof(std::uint64_t);
  for (const FieldSpec& f : o.fields) {
    if (f.name.empty() || f.name.size() >= kNameBytes) {
      throw Error("field name '" + f.name + "' must have 1 to " + std::to_string(kNameBytes - 1) +
                  " characters");
    }
    if (f.shape.size() + 1 > kMaxDims) {
      throw Error("field '" + f.name + "' has " + std::to_string(f.shape.size()) +
                  " dimensions; at most " + std::to_string(kMaxDims - 1) + " per sample");
    }
    std::size_t bytes = dtype_size(f.dtype);
    for (std::int64_t d : f.shape) {
      if (d <= 0) throw Error("field '" + f.name + "' has a dimension of " + std::to_string(d));
      bytes *= static_cast<std::size_t>(d);
    }
    cursor = align_up(cursor, kFieldAlign);
    l.field_offsets.push_back(cursor);
    l.sample_bytes.push_back(bytes);
    cursor += std::uint64_t{o.batch_size} * bytes;
  }
  const std::uint64_t page = static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
  l.needed_slot_bytes = cursor;
  if (o.slot_bytes == 0) {
    l.slot_bytes = align_up(cursor, page);
  } else {
    if (o.slot_bytes < cursor) {
      throw Error("a batch of " + std::to_string(o.batch_size) + " samples needs " + std::to_string(cursor) +
                  " bytes per slot but options.slot_bytes is " + std::to_string(o.slot_bytes) +
                  "; raise options.slot_bytes to at least " + std::to_string(cursor) + " (or set it to 0)");
    }
    l.slot_bytes = align_up(o.slot_bytes, page);
  }

  l.skip_offset = align_up(sizeof(ArenaHeader), kCacheLine);
  l.channels_offset = align_up(l.skip_offset + sizeof(SkipList), kCacheLine);
  l.slots_offset = align_up(l.channels_offset + std::uint64_t{l.workers} * sizeof(WorkerChannel), page);
  l.total_bytes = l.slots_offset + std::uint64_t{l.slots} * l.slot_bytes;
  return l;
}

}  // namespace sluice::detail
