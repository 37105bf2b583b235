// The pipeline language end to end through real workers: sources, map,
// map_batch, declared and inferred fields, require next to the script.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <set>

#include "sluice/error.h"
#include "sluice/loader.h"
#include "sluice/script.h"
#include "support.h"

using sluice::test::TempDir;

namespace {

template <typename T>
std::vector<T> values(const sluice::Batch& batch, const char* field) {
  const sluice::FieldView view = batch.field(field);
  std::vector<T> out(view.nbytes / sizeof(T));
  std::memcpy(out.data(), view.data, view.nbytes);
  return out;
}

}  // namespace

TEST_CASE("range source with a make function, map into ctx.out, through workers", "[pipeline]") {
  TempDir dir;
  const std::string path = dir.write("range.lua", R"(
local sluice = require("sluice")
return sluice.pipeline {
  source = sluice.range(50, function(i, ctx) return { base = 10 * i } end),
  fields = { { "x", "float32", { 3 } }, { "id", "int64" } },
  map = function(s, ctx)
    local x = ctx.out.x
    for k = 0, 2 do x.data[k] = s.base + k end
    return { x = x, id = ctx.index }
  end,
  batch_size = 8, workers = 2,
}
)");
  sluice::Script script = sluice::load_script({.path = path});
  REQUIRE(script.options.dataset_size == 50);
  REQUIRE(script.options.batch_size == 8);
  sluice::Loader loader(script.options);
  std::size_t seen = 0;
  while (auto batch = loader.next()) {
    const auto x = values<float>(*batch, "x");
    const auto id = values<std::int64_t>(*batch, "id");
    for (std::size_t j = 0; j < batch->size(); ++j) {
      const std::uint64_t i = batch->sample_ids()[j];
      CHECK(id[j] == static_cast<std::int64_t>(i));
      for (std::size_t k = 0; k < 3; ++k) CHECK(x[3 * j + k] == static_cast<float>(10 * i + k));
    }
    seen += batch->size();
  }
  CHECK(seen == 50);
  CHECK(script.worker_times().samples >= 50);
}

TEST_CASE("fields are inferred from sample 0 when not declared", "[pipeline]") {
  TempDir dir;
  const std::string path = dir.write("infer.lua", R"(
local sluice = require("sluice")
return sluice.pipeline {
  source = sluice.range(20),
  map = function(i, ctx)
    local img = ctx:tensor("uint8", { 2, 2, 3 })
    for k = 0, 11 do img.data[k] = (i + k) % 256 end
    return { image = img, label = i % 3, weight = 0.5, ok = true }
  end,
  batch_size = 4, workers = 1,
}
)");
  sluice::Script script = sluice::load_script({.path = path});
  const auto& f = script.options.fields;
  REQUIRE(f.size() == 4);
  CHECK(f[0].name == "image");
  CHECK(f[0].dtype == sluice::DType::u8);
  CHECK(f[0].shape == std::vector<std::int64_t>{2, 2, 3});
  CHECK(f[1].name == "label");
  CHECK(f[1].dtype == sluice::DType::i64);
  CHECK(f[2].name == "ok");
  CHECK(f[2].dtype == sluice::DType::boolean);
  CHECK(f[3].name == "weight");
  CHECK(f[3].dtype == sluice::DType::f64);
  REQUIRE_FALSE(script.notes.empty());
  CHECK_THAT(script.notes[0], Catch::Contains("inferred from sample 0"));

  sluice::Loader loader(script.options);
  auto batch = loader.next();
  REQUIRE(batch);
  const auto image = values<std::uint8_t>(*batch, "image");
  for (std::size_t j = 0; j < batch->size(); ++j) {
    const std::uint64_t i = batch->sample_ids()[j];
    for (std::size_t k = 0; k < 12; ++k) CHECK(image[12 * j + k] == (i + k) % 256);
  }
}

TEST_CASE("files source: an explicit list and a directory pattern", "[pipeline]") {
  TempDir dir;
  for (int n = 0; n < 5; ++n) {
    dir.write("data/rec" + std::to_string(n) + ".bin", std::string(static_cast<std::size_t>(n + 1), char('a' + n)));
  }
  dir.write("data/skip.txt", "not a record");
  const char* map = R"(
  fields = { { "size", "int32" }, { "first", "uint8" }, { "sum", "int64" } },
  map = function(s, ctx)
    local b, sum = s.bytes, 0
    for k = 0, b.numel - 1 do sum = sum + b.data[k] end
    return { size = b.numel, first = b.data[0], sum = sum }
  end,
  batch_size = 2, workers = 2,
}
)";
  const std::string by_list = dir.write("list.lua", std::string(R"(
local sluice = require("sluice")
return sluice.pipeline {
  source = sluice.files { "data/rec0.bin", "data/rec1.bin", "data/rec2.bin", "data/rec3.bin", "data/rec4.bin" },
)") + map);
  const std::string by_dir = dir.write("dir.lua", std::string(R"(
local sluice = require("sluice")
return sluice.pipeline {
  source = sluice.files { dir = "data", match = "*.bin" },
)") + map);
  for (const std::string& path : {by_list, by_dir}) {
    sluice::Script script = sluice::load_script({.path = path});
    REQUIRE(script.options.dataset_size == 5);
    sluice::Loader loader(script.options);
    std::set<std::uint64_t> seen;
    while (auto batch = loader.next()) {
      const auto size = values<std::int32_t>(*batch, "size");
      const auto first = values<std::uint8_t>(*batch, "first");
      const auto sum = values<std::int64_t>(*batch, "sum");
      for (std::size_t j = 0; j < batch->size(); ++j) {
        const std::uint64_t i = batch->sample_ids()[j];
        seen.insert(i);
        CHECK(size[j] == static_cast<std::int32_t>(i + 1));
        CHECK(first[j] == 'a' + i);
        CHECK(sum[j] == static_cast<std::int64_t>((i + 1) * ('a' + i)));
      }
    }
    CHECK(seen.size() == 5);
  }
}

TEST_CASE("map_batch works on whole batches in place and fills fields map leaves", "[pipeline]") {
  TempDir dir;
  const std::string path = dir.write("batch.lua", R"(
local sluice = require("sluice")
return sluice.pipeline {
  source = sluice.range(30),
  fields = { { "x", "float32", { 2 } }, { "rows", "int32" } },
  map = function(i, ctx)
    local x = ctx.out.x
    x.data[0], x.data[1] = i, 2 * i
    return { x = x }
  end,
  map_batch = function(batch, ctx)
    local x, n = batch.x, ctx.size
    assert(x.shape[1] == n and x.shape[2] == 2)
    local mean = 0
    for j = 0, n - 1 do mean = mean + x.data[2 * j] end
    mean = mean / n
    for j = 0, n - 1 do
      x.data[2 * j] = x.data[2 * j] - mean
      batch.rows.data[j] = n
    end
  end,
  batch_size = 7, workers = 2,
}
)");
  sluice::Script script = sluice::load_script({.path = path});
  sluice::Loader loader(script.options);
  std::size_t batches = 0;
  while (auto batch = loader.next()) {
    ++batches;
    const auto x = values<float>(*batch, "x");
    const auto rows = values<std::int32_t>(*batch, "rows");
    const auto ids = batch->sample_ids();
    const double mean = std::accumulate(ids.begin(), ids.end(), 0.0) / static_cast<double>(ids.size());
    for (std::size_t j = 0; j < batch->size(); ++j) {
      CHECK(x[2 * j] == Approx(static_cast<double>(ids[j]) - mean));
      CHECK(x[2 * j + 1] == static_cast<float>(2 * ids[j]));
      CHECK(rows[j] == static_cast<std::int32_t>(batch->size()));
    }
  }
  CHECK(batches == 5);  // 30 = 4 * 7 + 2: a short last batch
}

TEST_CASE("require finds modules next to the pipeline script", "[pipeline]") {
  TempDir dir;
  dir.write("lib/augment.lua", R"(
local M = {}
function M.scale(v) return 3 * v end
return M
)");
  dir.write("lib/helpers.lua", "return { offset = 11 }\n");
  const std::string path = dir.write("lib/pipeline.lua", R"(
local sluice = require("sluice")
local augment = require("augment")
local helpers = require("helpers")
return sluice.pipeline {
  source = sluice.range(12),
  fields = { { "y", "int64" } },
  map = function(i) return { y = augment.scale(i) + helpers.offset } end,
  batch_size = 4, workers = 2,
}
)");
  sluice::Script script = sluice::load_script({.path = path});
  sluice::Loader loader(script.options);
  while (auto batch = loader.next()) {
    const auto y = values<std::int64_t>(*batch, "y");
    for (std::size_t j = 0; j < batch->size(); ++j) {
      CHECK(y[j] == static_cast<std::int64_t>(3 * batch->sample_ids()[j] + 11));
    }
  }
}

TEST_CASE("overrides replace the script's options", "[pipeline]") {
  TempDir dir;
  const std::string path = dir.write("opts.lua", R"(
local sluice = require("sluice")
return sluice.pipeline {
  source = sluice.range(40), map = function(i) return { x = i } end,
  batch_size = 5, drop_last = true, shuffle = true, seed = 3,
  epochs = 4, workers = 3, prefetch = 5, ordered = false, device = "auto",
}
)");
  sluice::Script plain = sluice::load_script({.path = path});
  CHECK(plain.options.epochs == 4);
  CHECK(plain.options.workers == 3);
  CHECK(plain.options.slots == 5);
  CHECK(plain.options.seed == 3);
  CHECK(plain.options.shuffle);
  CHECK(plain.options.drop_last);
  CHECK_FALSE(plain.options.ordered);
  CHECK(plain.device == "cpu");
  CHECK_THAT(plain.notes[0], Catch::Contains("\"auto\" runs on the cpu"));

  sluice::Script over = sluice::load_script({.path = path, .epochs = 2, .workers = 1, .prefetch = 3, .seed = 9});
  CHECK(over.options.epochs == 2);
  CHECK(over.options.workers == 1);
  CHECK(over.options.slots == 3);
  CHECK(over.options.seed == 9);

  sluice::Loader loader(over.options);
  std::vector<std::set<std::uint64_t>> epochs(2);
  while (auto batch = loader.next()) {
    for (auto i : batch->sample_ids()) epochs[batch->epoch()].insert(i);
  }
  CHECK(epochs[0].size() == 40);
  CHECK(epochs[1].size() == 40);
}
