// A producer that writes where it must not (a bug in user code): the skip
// list's count, every part of a field's description in its slot's header,
// the header of a batch already delivered, and a crash before the batch's
// first sample. The parent must stay intact and say what happened, or go on.
#include <catch2/catch.hpp>

#include <dlpack/dlpack.h>
#include <signal.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "shared_layout.h"
#include "sluice/error.h"
#include "sluice/loader.h"
#include "sluice/producer.h"

using namespace sluice;

namespace {

Options id_options(std::uint64_t n, std::uint32_t batch, std::uint32_t workers) {
  Options o;
  o.dataset_size = n;
  o.batch_size = batch;
  o.workers = workers;
  o.fields = {{"id", DType::u64, {2}}};
  o.producer = per_sample([](const SampleRef& s) {
    s.as<std::uint64_t>(0)[0] = s.index;
    s.as<std::uint64_t>(0)[1] = s.index * 3;
  });
  return o;
}

detail::SlotHeader& header_of(const SampleRef& s, const Options& o) {
  const std::uint64_t offset = detail::ArenaLayout::compute(o).field_offsets[0];
  return *reinterpret_cast<detail::SlotHeader*>(s.batch.data(0) - offset);
}

// The arena's start, from a slot inside it: the first candidate, going down
// slot by slot, that holds the arena's magic (every candidate lies in the arena).
std::byte* arena_of(const SampleRef& s, const Options& o) {
  const detail::ArenaLayout l = detail::ArenaLayout::compute(o);
  std::byte* slot = s.batch.data(0) - l.field_offsets[0];
  for (std::uint64_t k = 0;; ++k) {
    std::byte* base = slot - l.slots_offset - k * l.slot_bytes;
    if (reinterpret_cast<const detail::ArenaHeader*>(base)->magic == detail::kArenaMagic) return base;
  }
}

std::string error_of(Loader& loader) {
  try {
    while (loader.next()) {
    }
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("a producer that scribbles a field's description fails the run naming it", "[supervision][scribble]") {
  Options o = id_options(100, 10, 1);
  std::string part;
  std::function<void(detail::FieldDesc&)> scribble;
  SECTION("dtype") {
    scribble = [](detail::FieldDesc& d) { d.dtype = 200; };
    part = "its dtype (200)";
  }
  SECTION("shape") {
    scribble = [](detail::FieldDesc& d) { d.shape[1] = std::int64_t{1} << 40; };
    part = "its shape (dimension 1)";
  }
  SECTION("strides") {
    scribble = [](detail::FieldDesc& d) { d.strides[0] = -7; };
    part = "its strides (dimension 0)";
  }
  SECTION("name") {
    scribble = [](detail::FieldDesc& d) { std::memset(d.name, 'x', sizeof d.name); };
    part = "its name";
  }
  SECTION("number of dimensions") {
    scribble = [](detail::FieldDesc& d) { d.ndim = 1000; };
    part = "its number of dimensions (1000)";
  }
  const Options layout_of = o;
  o.producer = per_sample([&, layout_of](const SampleRef& s) {
    s.as<std::uint64_t>(0)[0] = s.index;
    if (s.index == 35) scribble(header_of(s, layout_of).fields[0]);
  });
  Loader loader(o);
  const std::string message = error_of(loader);
  INFO(message);
  REQUIRE(message.find("field 0 ('id'): " + part) != std::string::npos);
  REQUIRE(message.find("epoch 0, batch 3") != std::string::npos);
  REQUIRE_THROWS_WITH(loader.next(), message);
}

TEST_CASE("a producer that scribbles the skip list's count cannot make the parent write out of bounds",
          "[supervision][scribble]") {
  Options o = id_options(400, 10, 2);
  o.on_error = OnError::skip;
  const Options layout_of = o;
  o.producer = per_sample([layout_of](const SampleRef& s) {
    if (s.index % 50 == 7) {
      // Just below the limit the parent checked against, then far past it.
      auto& list = *reinterpret_cast<detail::SkipList*>(arena_of(s, layout_of) +
                                                        detail::ArenaLayout::compute(layout_of).skip_offset);
      list.count.store(s.index % 100 == 7 ? detail::kMaxSkipped - 1 : 0x7fffffffu, std::memory_order_relaxed);
      throw std::runtime_error("bad sample " + std::to_string(s.index));
    }
    s.as<std::uint64_t>(0)[0] = s.index;
  });
  Loader loader(o);
  std::uint64_t samples = 0;
  while (auto b = loader.next()) {
    for (std::size_t j = 0; j < b->size(); ++j) REQUIRE(b->sample_ids()[j] % 50 != 7);
    samples += b->size();
  }
  REQUIRE(samples == 400 - 8);
  REQUIRE(loader.stats().skipped_samples.size() == 8);
}

TEST_CASE("a producer that scribbles the skip list's count makes no worker drop a good sample",
          "[supervision][scribble]") {
  // Shuffled, so sample 0 comes in a later batch than the scribble; one
  // worker, so that worker reads the scribbled count before any publish
  // of the parent's. Unwritten entries must not read as sample 0.
  Options o = id_options(200, 10, 1);
  o.shuffle = true;
  o.seed = 11;
  o.on_error = OnError::skip;
  const Options layout_of = o;
  bool scribbled = false;
  o.producer = per_sample([layout_of, &scribbled](const SampleRef& s) {
    if (!scribbled && s.index != 0) {
      scribbled = true;  // in the worker's copy: once per worker
      auto& list = *reinterpret_cast<detail::SkipList*>(arena_of(s, layout_of) +
                                                        detail::ArenaLayout::compute(layout_of).skip_offset);
      list.count.store(detail::kMaxSkipped, std::memory_order_relaxed);
    }
    s.as<std::uint64_t>(0)[0] = s.index;
  });
  Loader loader(o);
  std::vector<bool> seen(200);
  while (auto b = loader.next()) {
    for (std::size_t j = 0; j < b->size(); ++j) seen[b->sample_ids()[j]] = true;
  }
  REQUIRE(std::count(seen.begin(), seen.end(), true) == 200);
  REQUIRE(loader.stats().skipped_samples.empty());
}

TEST_CASE("a slot's header written after delivery changes nothing a Batch or a DLPack tensor shows",
          "[supervision][scribble]") {
  const Options o = id_options(40, 4, 1);
  Loader loader(o);
  auto b = loader.next();
  REQUIRE(b);
  DLManagedTensor* t = b->to_dlpack(0);
  const std::uint64_t offset = detail::ArenaLayout::compute(o).field_offsets[0];
  auto& h = *reinterpret_cast<detail::SlotHeader*>(static_cast<std::byte*>(b->field(0).data) - offset);
  h.fields[0].dtype = 200;
  h.fields[0].shape[0] = std::int64_t{1} << 40;
  h.fields[0].ndim = 9;
  h.size = 0xffffffffu;
  std::memset(h.fields[0].name, 'x', sizeof h.fields[0].name);
  const FieldView v = b->field(0);
  REQUIRE(v.name == "id");
  REQUIRE(v.dtype == DType::u64);
  REQUIRE(v.shape.size() == 2);
  REQUIRE(v.shape[0] == 4);
  REQUIRE(v.shape[1] == 2);
  REQUIRE(b->size() == 4);
  REQUIRE(b->field("id").nbytes == 4 * 2 * 8);
  REQUIRE(t->dl_tensor.ndim == 2);
  REQUIRE(t->dl_tensor.shape[0] == 4);
  REQUIRE(t->dl_tensor.dtype.bits == 64);
  t->deleter(t);
}

TEST_CASE("a crash while a batch is announced to the producer is blamed on that batch", "[supervision][faults]") {
  // upcoming() crashes for the batch that holds sample 42: with on_error =
  // skip its samples are skipped after max_retries, and the run goes on.
  struct CrashingAnnouncer : Producer {
    void fill(BatchContext& b) override {
      for (std::size_t j = 0; j < b.size(); ++j) b.as<std::uint64_t>(0, j)[0] = b.samples()[j];
    }
    void upcoming(std::uint64_t, std::uint64_t, std::span<const std::uint64_t> samples) override {
      for (std::uint64_t id : samples) {
        if (id == 42) raise(SIGSEGV);
      }
    }
  };
  Options o = id_options(100, 10, 2);
  o.producer = std::make_shared<CrashingAnnouncer>();
  o.on_error = OnError::skip;
  o.max_retries = 2;
  Loader loader(o);
  std::uint64_t samples = 0;
  while (auto b = loader.next()) samples += b->size();
  const Stats s = loader.stats();
  REQUIRE(samples == 90);
  REQUIRE(s.skipped_samples.size() == 10);
  REQUIRE(s.skip_reasons[0].find("epoch 0, batch 4 (samples 40 to 49)") != std::string::npos);
  REQUIRE(s.skip_reasons[0].find("signal 11") != std::string::npos);

  o.on_error = OnError::fail;
  Loader failing(o);
  const std::string message = error_of(failing);
  INFO(message);
  REQUIRE(message.find("epoch 0, batch 4 (samples 40 to 49) failed 2 times in a row") != std::string::npos);
}
