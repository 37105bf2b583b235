// The script Producer driven directly, over a batch buffer built by the test:
// what fill() writes, byte for byte, for every dtype.
#include <catch2/catch.hpp>

#include <cstring>
#include <vector>

#include "sluice/half.h"
#include "sluice/error.h"
#include "sluice/producer.h"
#include "sluice/script.h"
#include "support.h"

using sluice::test::TempDir;

namespace {

// A batch of `samples` laid out as the runtime lays out a slot: each field an
// array of size() rows, fields one after another.
struct LocalBatch {
  std::vector<sluice::FieldSpec> fields;
  std::vector<std::size_t> sample_bytes;
  std::vector<std::uint64_t> offsets;
  std::vector<std::uint64_t> samples;
  std::vector<std::byte> memory;

  LocalBatch(const std::vector<sluice::FieldSpec>& f, std::vector<std::uint64_t> s)
      : fields(f), samples(std::move(s)) {
    std::uint64_t offset = 0;
    for (const auto& field : fields) {
      std::size_t bytes = sluice::dtype_size(field.dtype);
      for (auto d : field.shape) bytes *= static_cast<std::size_t>(d);
      sample_bytes.push_back(bytes);
      offsets.push_back(offset);
      offset += (bytes * samples.size() + 63) / 64 * 64;
    }
    memory.assign(offset, std::byte{0xEE});
  }
  sluice::BatchContext context(std::uint64_t epoch = 0, std::uint64_t batch = 0) {
    return sluice::BatchContext(epoch, batch, 0, samples, fields, sample_bytes, offsets, memory.data());
  }
};

template <typename T>
T at(sluice::BatchContext& ctx, std::size_t f, std::size_t j, std::size_t k = 0) {
  T value;
  std::memcpy(&value, ctx.data(f, j) + k * sizeof(T), sizeof(T));
  return value;
}

}  // namespace

TEST_CASE("fill writes every dtype, converting float16 and bfloat16", "[producer]") {
  TempDir dir;
  const std::string path = dir.write("dtypes.lua", R"(
local sluice = require("sluice")
return sluice.pipeline {
  source = sluice.range(10),
  fields = {
    { "u8", "uint8" }, { "i8", "int8" }, { "u16", "uint16" }, { "i16", "int16" },
    { "u32", "uint32" }, { "i32", "int32" }, { "u64", "uint64" }, { "i64", "int64" },
    { "f16", "float16" }, { "bf16", "bfloat16" }, { "f32", "float32" }, { "f64", "float64" },
    { "flag", "bool" }, { "grid", "int32", { 2, 3 } },
  },
  map = function(i, ctx)
    local grid = ctx.out.grid
    for k = 0, 5 do grid.data[k] = 100 * i + k end
    return {
      u8 = 250 + i % 5, i8 = -i, u16 = 60000 + i, i16 = -30000 - i, u32 = 4000000000 + i,
      i32 = -2000000000 - i, u64 = 2^60 + 1024 * i, i64 = -(2^60) - 1024 * i,
      f16 = 0.5 + i, bf16 = -1.5 - i, f32 = i / 4, f64 = i / 3,
      flag = i % 2 == 1, grid = grid,
    }
  end,
}
)");
  sluice::Script script = sluice::load_script({.path = path});
  LocalBatch batch(script.options.fields, {3, 8});
  auto& producer = *script.options.producer;
  producer.start_worker(0);
  sluice::BatchContext ctx = batch.context();
  producer.fill(ctx);

  for (std::size_t j = 0; j < 2; ++j) {
    const std::uint64_t i = batch.samples[j];
    CHECK(at<std::uint8_t>(ctx, 0, j) == 250 + i % 5);
    CHECK(at<std::int8_t>(ctx, 1, j) == -static_cast<int>(i));
    CHECK(at<std::uint16_t>(ctx, 2, j) == 60000 + i);
    CHECK(at<std::int16_t>(ctx, 3, j) == -30000 - static_cast<int>(i));
    CHECK(at<std::uint32_t>(ctx, 4, j) == 4000000000u + i);
    CHECK(at<std::int32_t>(ctx, 5, j) == -2000000000 - static_cast<int>(i));
    CHECK(at<std::uint64_t>(ctx, 6, j) == (std::uint64_t{1} << 60) + 1024 * i);
    CHECK(at<std::int64_t>(ctx, 7, j) == -(std::int64_t{1} << 60) - 1024 * static_cast<std::int64_t>(i));
    CHECK(sluice::half_to_float(at<std::uint16_t>(ctx, 8, j)) == 0.5f + i);
    CHECK(sluice::bfloat16_to_float(at<std::uint16_t>(ctx, 9, j)) == -1.5f - i);
    CHECK(at<float>(ctx, 10, j) == static_cast<float>(i) / 4);
    CHECK(at<double>(ctx, 11, j) == static_cast<double>(i) / 3);
    CHECK(at<bool>(ctx, 12, j) == (i % 2 == 1));
    for (std::size_t k = 0; k < 6; ++k) CHECK(at<std::int32_t>(ctx, 13, j, k) == static_cast<int>(100 * i + k));
  }
}

TEST_CASE("returned tensors are copied, ctx.out is written in place", "[producer]") {
  TempDir dir;
  const std::string path = dir.write("copy.lua", R"(
local sluice = require("sluice")
local constant = sluice.tensor("float32", { 4 }):fill(7)
return sluice.pipeline {
  source = sluice.range(6),
  fields = { { "scratch", "float32", { 4 } }, { "const", "float32", { 4 } }, { "inplace", "float32", { 4 } } },
  map = function(i, ctx)
    local s = ctx:tensor("float32", { 4 })
    for k = 0, 3 do s.data[k] = i + k end
    local out = ctx.out.inplace
    for k = 0, 3 do out.data[k] = -i - k end
    return { scratch = s, const = constant, inplace = out }
  end,
}
)");
  sluice::Script script = sluice::load_script({.path = path});
  LocalBatch batch(script.options.fields, {5, 1, 2});
  script.options.producer->start_worker(0);
  sluice::BatchContext ctx = batch.context();
  script.options.producer->fill(ctx);
  for (std::size_t j = 0; j < 3; ++j) {
    const float i = static_cast<float>(batch.samples[j]);
    for (std::size_t k = 0; k < 4; ++k) {
      CHECK(at<float>(ctx, 0, j, k) == i + k);
      CHECK(at<float>(ctx, 1, j, k) == 7.0f);
      CHECK(at<float>(ctx, 2, j, k) == -i - k);
    }
  }
}

TEST_CASE("fill counts its time and samples in shared counters", "[producer]") {
  TempDir dir;
  const std::string path = dir.write("count.lua", R"(
local sluice = require("sluice")
return sluice.pipeline { source = sluice.range(6), map = function(i) return { x = i } end }
)");
  sluice::Script script = sluice::load_script({.path = path});
  LocalBatch batch(script.options.fields, {0, 1, 2});
  script.options.producer->start_worker(0);
  sluice::BatchContext ctx = batch.context();
  script.options.producer->fill(ctx);
  const sluice::ScriptWorkerTimes times = script.worker_times();
  CHECK(times.workers == 1);
  CHECK(times.batches == 1);
  CHECK(times.samples == 3);
  CHECK(times.fill_ns > 0);
}

TEST_CASE("a Loader whose fields were edited is refused by the producer", "[producer]") {
  TempDir dir;
  const std::string path = dir.write("edit.lua", R"(
local sluice = require("sluice")
return sluice.pipeline { source = sluice.range(6), map = function(i) return { x = i } end }
)");
  sluice::Script script = sluice::load_script({.path = path});
  script.options.fields[0].dtype = sluice::DType::f32;
  LocalBatch batch(script.options.fields, {0});
  script.options.producer->start_worker(0);
  sluice::BatchContext ctx = batch.context();
  REQUIRE_THROWS_WITH(script.options.producer->fill(ctx), Catch::Contains("must not be edited"));
}
