// The staging logic on the host backend, fed by real Loaders and worker
// processes: ordering, content, buffer-ring reuse, event-guarded recycling,
// host-slot return, finishing, errors and teardown.
#include <catch2/catch.hpp>

#include <dlpack/dlpack.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "sluice/cuda/host_backend.h"
#include "sluice/cuda/stage.h"
#include "sluice/error.h"
#include "sluice/loader.h"
#include "sluice/producer.h"
#include "stage_test_support.h"

using namespace sluice;
using namespace sluice::cuda;
using namespace sluice::cuda::test;
using namespace std::chrono_literals;

namespace {

StageOptions host_stage(std::uint32_t depth) {
  StageOptions so;
  so.device = "cpu";
  so.depth = depth;
  return so;
}

// Checks a staged (unnormalized) batch against what the producer wrote.
void check_content(const DeviceBatch& b, std::int64_t h = 4, std::int64_t w = 5, std::int64_t c = 3) {
  const DeviceField image = b.field("image");
  const DeviceField label = b.field(1);
  REQUIRE(image.dtype == DType::u8);
  REQUIRE(image.shape.size() == 4);
  REQUIRE(static_cast<std::size_t>(image.shape[0]) == b.size());
  REQUIRE(image.shape[1] == h);
  REQUIRE(image.strides[0] == h * w * c);
  REQUIRE(image.nbytes == b.size() * static_cast<std::size_t>(h * w * c));
  REQUIRE(label.shape.size() == 1);
  const auto* px = image.as<const std::uint8_t>();
  const auto* lab = label.as<const std::int32_t>();
  for (std::size_t j = 0; j < b.size(); ++j) {
    const std::uint64_t id = b.sample_ids()[j];
    REQUIRE(lab[j] == static_cast<std::int32_t>(id));
    for (std::int64_t k = 0; k < h * w * c; ++k) REQUIRE(px[j * h * w * c + k] == pixel_value(id, k));
  }
}

}  // namespace

TEST_CASE("the stage delivers every batch in Loader order with its content", "[stage]") {
  Options o = image_options(103, 8, 3);
  o.shuffle = true;
  o.seed = 5;
  o.epochs = 2;
  Loader loader(o);
  Stage stage(loader, host_stage(3));
  CHECK(stage.device().kind == DeviceKind::cpu);
  CHECK(stage.note().empty());
  const std::span<std::byte> arena = loader.memory();

  std::uint64_t expected_epoch = 0, expected_index = 0;
  std::multiset<std::uint64_t> seen;
  std::size_t batches = 0;
  while (auto b = stage.next()) {
    CHECK(b->epoch() == expected_epoch);
    CHECK(b->index() == expected_index);
    check_content(*b);
    // The data lies in a ring buffer, not in the arena.
    const auto* p = static_cast<const std::byte*>(b->field(0).data);
    CHECK((p < arena.data() || p >= arena.data() + arena.size()));
    for (std::uint64_t id : b->sample_ids()) seen.insert(id);
    ++batches;
    ++expected_index;
    if (expected_index == 13) {  // ceil(103 / 8) batches per epoch
      CHECK(b->size() == 103 % 8);
      expected_index = 0;
      ++expected_epoch;
    }
  }
  CHECK(batches == 26);
  CHECK(seen.size() == 206);
  for (std::uint64_t id = 0; id < 103; ++id) CHECK(seen.count(id) == 2);
  const StageStats st = stage.stats();
  CHECK(st.batches_delivered == 26);
  CHECK(st.bytes_staged == 206 * (60 + 4));
  CHECK_FALSE(stage.next().has_value());  // stays over
}

TEST_CASE("the ring reuses exactly depth buffers, each only after its batch was released", "[stage]") {
  Loader loader(image_options(200, 4, 2));
  Stage stage(loader, host_stage(3));
  std::set<const void*> buffers;
  std::vector<DeviceBatch> held;
  std::set<const void*> held_buffers;
  while (auto b = stage.next()) {
    const void* p = b->field(0).data;
    buffers.insert(p);
    CHECK(held_buffers.count(p) == 0);  // never a buffer a held batch is in
    check_content(*b);
    held_buffers.insert(p);
    held.push_back(std::move(*b));
    if (held.size() == 2) {  // hold two batches at a time, release the older
      for (const auto& h : held) check_content(h);  // still intact
      held_buffers.erase(held.front().field(0).data);
      held.erase(held.begin());
    }
  }
  CHECK(buffers.size() == 3);
}

TEST_CASE("next() says so when the trainer holds every buffer", "[stage]") {
  Loader loader(image_options(100, 4, 2));
  Stage stage(loader, host_stage(2));
  auto a = stage.next();
  auto b = stage.next();
  REQUIRE(a);
  REQUIRE(b);
  CHECK_THROWS_WITH(stage.next(), Catch::Contains("all 2 device buffers are held by the trainer"));
  a->release();
  auto c = stage.next();
  REQUIRE(c);
  CHECK(c->index() == 2);
  check_content(*c);
}

TEST_CASE("a released buffer is not overwritten before the consumer stream has read it", "[stage]") {
  // depth 1: every copy goes into the one buffer. The trainer queues a slow
  // read of each batch on its stream and releases the batch at once; the
  // stage must hold the next copy back until that read has run.
  auto backend = std::make_shared<HostBackend>();
  StreamHandle trainer = backend->create_stream();
  {
    Loader loader(image_options(40, 4, 2));
    StageOptions so = host_stage(1);
    so.consumer_stream = trainer;
    Stage stage(loader, so, backend);
    std::vector<std::uint64_t> first_ids;
    std::vector<int> read_ok(10, -1);
    std::size_t k = 0;
    while (auto b = stage.next()) {
      REQUIRE(k < read_ok.size());
      const DeviceField image = b->field(0);
      std::vector<std::uint64_t> ids(b->sample_ids().begin(), b->sample_ids().end());
      const std::size_t n = b->size();
      backend->enqueue(trainer, [image, ids, n, k, &read_ok] {
        std::this_thread::sleep_for(15ms);  // the trainer's kernel
        bool ok = true;
        const auto* px = image.as<const std::uint8_t>();
        for (std::size_t j = 0; j < n; ++j)
          for (std::int64_t q = 0; q < 60; ++q) ok = ok && px[j * 60 + q] == pixel_value(ids[j], q);
        read_ok[k] = ok ? 1 : 0;
      });
      b->release();  // host side done at once; the stream still has to read
      ++k;
    }
    EventHandle done = backend->create_event();
    backend->record(done, trainer);
    backend->synchronize(done);
    backend->destroy_event(done);
    CHECK(k == 10);
    for (int ok : read_ok) CHECK(ok == 1);
  }
  backend->destroy_stream(trainer);
}

TEST_CASE("a Loader with fewer slots than the ring is deep does not stall the stage", "[stage]") {
  Options o = image_options(64, 4, 1);
  o.slots = 1;
  Loader loader(o);
  Stage stage(loader, host_stage(4));
  std::size_t n = 0;
  std::vector<DeviceBatch> held;
  while (auto b = stage.next()) {
    check_content(*b);
    held.push_back(std::move(*b));
    if (held.size() == 3) held.clear();
    ++n;
  }
  CHECK(n == 16);
}

TEST_CASE("the stage normalizes uint8 fields to float32 CHW", "[stage][normalize]") {
  Loader loader(image_options(20, 4, 2, 2, 3, 3));
  StageOptions so = host_stage(2);
  Normalize nz;
  nz.field = "image";
  nz.to = DType::f32;
  nz.mean = {10.0f, 20.0f, 30.0f};
  nz.stddev = {2.0f, 4.0f, 5.0f};
  nz.hwc_to_chw = true;
  so.normalize = {nz};
  Stage stage(loader, so);
  std::size_t n = 0;
  while (auto b = stage.next()) {
    const DeviceField f = b->field("image");
    REQUIRE(f.dtype == DType::f32);
    REQUIRE(f.shape.size() == 4);
    CHECK(f.shape[1] == 3);  // C
    CHECK(f.shape[2] == 2);  // H
    CHECK(f.shape[3] == 3);  // W
    CHECK(f.strides[1] == 6);
    CHECK(f.nbytes == b->size() * 18 * sizeof(float));
    const float* out = f.as<const float>();
    for (std::size_t j = 0; j < b->size(); ++j)
      for (int y = 0; y < 2; ++y)
        for (int x = 0; x < 3; ++x)
          for (int c = 0; c < 3; ++c) {
            const float v = pixel_value(b->sample_ids()[j], (y * 3 + x) * 3 + c);
            REQUIRE(out[((j * 3 + c) * 2 + y) * 3 + x] == (v - nz.mean[c]) * (1.0f / nz.stddev[c]));
          }
    CHECK(b->field("label").as<const std::int32_t>()[0] == static_cast<std::int32_t>(b->sample_ids()[0]));
    ++n;
  }
  CHECK(n == 5);
}

TEST_CASE("bad Normalize options fail before anything runs, naming the field", "[stage][normalize]") {
  Loader loader(image_options(8, 4, 1));
  auto with = [](Normalize n) {
    StageOptions so = host_stage(2);
    so.normalize = {std::move(n)};
    return so;
  };
  Normalize n;
  n.field = "nope";
  CHECK_THROWS_WITH(Stage(loader, with(n)), Catch::Contains("'nope'") && Catch::Contains("no such field"));
  n.field = "label";
  CHECK_THROWS_WITH(Stage(loader, with(n)), Catch::Contains("'label'") && Catch::Contains("only uint8"));
  n.field = "image";
  n.mean = {1, 2};
  n.stddev = {1, 2};
  CHECK_THROWS_WITH(Stage(loader, with(n)), Catch::Contains("one per channel (3)"));
  n.mean = {0};
  n.stddev = {0};
  CHECK_THROWS_WITH(Stage(loader, with(n)), Catch::Contains("positive"));
  n.stddev = {1};
  n.to = DType::i32;
  CHECK_THROWS_WITH(Stage(loader, with(n)), Catch::Contains("float32 or float16"));
  StageOptions zero = host_stage(0);
  CHECK_THROWS_WITH(Stage(loader, zero), Catch::Contains("depth"));
}

TEST_CASE("hwc_to_chw needs an [H, W, C] field", "[stage][normalize]") {
  Options o = image_options(8, 4, 1);
  o.fields[0].shape = {12, 5};
  Loader loader(o);
  StageOptions so = host_stage(2);
  Normalize n;
  n.field = "image";
  n.hwc_to_chw = true;
  so.normalize = {n};
  CHECK_THROWS_WITH(Stage(loader, so), Catch::Contains("[H, W, C]"));
}

TEST_CASE("a worker failure reaches next() after the batches staged before it", "[stage]") {
  Options o = image_options(40, 4, 1);
  o.producer = per_sample([](const SampleRef& s) {
    if (s.index == 21) throw std::runtime_error("bad sample twenty-one");
    std::memset(s.data(0), 0, 60);
    *s.as<std::int32_t>(1) = static_cast<std::int32_t>(s.index);
  });
  Loader loader(o);
  Stage stage(loader, host_stage(3));
  std::size_t delivered = 0;
  try {
    while (auto b = stage.next()) {
      CHECK(b->index() == delivered);
      ++delivered;
    }
    FAIL("no error reached next()");
  } catch (const Error& e) {
    CHECK_THAT(e.what(), Catch::Contains("bad sample twenty-one"));
  }
  CHECK(delivered <= 5);  // at most batches 0..4 (the Loader may fail first); batch 5 holds sample 21
  CHECK_THROWS_AS(stage.next(), Error);  // and stays failed
}

TEST_CASE("run() hands every batch to the callback and releases it after", "[stage]") {
  Loader loader(image_options(30, 4, 2));
  Stage stage(loader, host_stage(2));
  std::size_t n = 0;
  stage.run([&](DeviceBatch& b) {
    CHECK(b.index() == n);
    check_content(b);
    ++n;
  });
  CHECK(n == 8);
}

TEST_CASE("batches outlive their Stage, and an early Stage teardown does not hang", "[stage]") {
  Options o = image_options(1000, 4, 2);
  o.epochs = 0;  // endless
  Loader loader(o);
  std::optional<DeviceBatch> kept;
  {
    Stage stage(loader, host_stage(3));
    kept = stage.next();
    auto other = stage.next();
    REQUIRE(other);
  }
  REQUIRE(kept);
  check_content(*kept);
  kept->release();
  CHECK(loader.interrupted());
}

TEST_CASE("DLPack export describes the staged field and holds its buffer", "[stage][dlpack]") {
  Loader loader(image_options(40, 4, 2));
  StageOptions so = host_stage(2);
  Normalize nz;
  nz.field = "image";
  nz.to = DType::f16;
  so.normalize = {nz};
  Stage stage(loader, so);
  DLManagedTensor* t = nullptr;
  const void* data = nullptr;
  {
    auto b = stage.next();
    REQUIRE(b);
    t = b->to_dlpack(0);
    data = b->field(0).data;
  }  // the batch is gone, the tensor keeps the buffer
  CHECK(t->dl_tensor.device.device_type == kDLCPU);
  CHECK(t->dl_tensor.data == data);
  CHECK(t->dl_tensor.ndim == 4);
  CHECK(t->dl_tensor.dtype.code == kDLFloat);
  CHECK(t->dl_tensor.dtype.bits == 16);
  CHECK(t->dl_tensor.shape[0] == 4);
  CHECK(t->dl_tensor.shape[3] == 3);
  std::set<const void*> later;
  for (int i = 0; i < 4; ++i) {
    auto b = stage.next();
    REQUIRE(b);
    later.insert(b->field(0).data);
  }
  CHECK(later.count(data) == 0);  // the exported buffer was not reused
  CHECK(later.size() == 1);
  t->deleter(t);
  bool reused = false;
  for (int i = 0; i < 3; ++i) {
    auto b = stage.next();
    REQUIRE(b);
    reused = reused || b->field(0).data == data;
  }
  CHECK(reused);
}

TEST_CASE("without a GPU device = auto delivers host batches and says so, and device = cuda fails", "[stage][device]") {
  if (device_available()) {
    WARN("a CUDA device exists: the no-GPU behaviour is not exercised here");
    return;
  }
  Loader loader(image_options(16, 4, 1));
  {
    StageOptions so;
    so.device = "cuda";
    CHECK_THROWS_WITH(Stage(loader, so), Catch::StartsWith("device = \"cuda\": no CUDA device"));
  }
  StageOptions so;
  so.device = "auto";
  Stage stage(loader, so);
  CHECK(stage.device().kind == DeviceKind::cpu);
  CHECK_THAT(stage.note(), Catch::Contains("host memory"));
  std::size_t n = 0;
  while (auto b = stage.next()) {
    check_content(*b);
    ++n;
  }
  CHECK(n == 4);
}
