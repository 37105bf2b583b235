// The image ops through a real pipeline.lua: examples/imagenet.lua on a small
// folder tree of Pillow's test images, in worker processes.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>

#include "sluice/error.h"
#include "sluice/loader.h"
#include "sluice/script.h"
#include "test_images.h"

namespace fs = std::filesystem;

namespace {

// A fresh directory: pipeline.lua plus train/CLASS/files copied from Pillow's images.
struct Tree {
  fs::path root;
  explicit Tree(const std::string& pipeline, const std::vector<std::pair<std::string, std::string>>& files) {
    static std::atomic<int> counter{0};
    root = fs::temp_directory_path() /
           ("sluice_ops_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::create_directories(root);
    fs::copy_file(pipeline, root / "pipeline.lua");
    for (const auto& [klass, name] : files) {
      fs::create_directories(root / "train" / klass);
      fs::copy_file(fs::path(SLUICE_PILLOW_IMAGES) / name, root / "train" / klass / name);
    }
  }
  ~Tree() { fs::remove_all(root); }
  std::string pipeline() const { return (root / "pipeline.lua").string(); }
};

const std::vector<std::pair<std::string, std::string>> kImages = {
    {"a_cmyk", "pil_sample_cmyk.jpg"}, {"a_cmyk", "hopper_gray.jpg"}, {"b_rgb", "hopper.jpg"},
    {"b_rgb", "pil_sample_rgb.jpg"},   {"c_png", "hopper.png"},       {"c_png", "rgb_trns.png"},
};

std::vector<float> first_batch(const std::string& pipeline, std::uint32_t workers,
                                       std::vector<std::int64_t>& labels) {
  sluice::Script script = sluice::load_script({.path = pipeline, .epochs = 1, .workers = workers});
  script.options.batch_size = 6;
  sluice::Loader loader(script.options);
  auto batch = loader.next();
  REQUIRE(batch);
  const auto image = batch->field("image");
  REQUIRE(image.dtype == sluice::DType::f32);
  REQUIRE(std::vector<std::int64_t>(image.shape.begin(), image.shape.end()) ==
          std::vector<std::int64_t>{6, 3, 224, 224});
  const auto label = batch->field("label").as<const std::int64_t>();
  labels.assign(label.begin(), label.end());
  const auto px = image.as<const float>();
  return {px.begin(), px.end()};
}

}  // namespace

TEST_CASE("examples/imagenet.lua decodes, crops, flips and normalizes in workers") {
  if (!sluice::ops::test::have_pillow_images()) return;
  const Tree tree(SLUICE_EXAMPLES_DIR "/imagenet.lua", kImages);
  std::vector<std::int64_t> labels_1, labels_2;
  const auto one = first_batch(tree.pipeline(), 1, labels_1);
  const auto two = first_batch(tree.pipeline(), 2, labels_2);
  CHECK(one == two);  // crops and flips come from ctx.rng, not from the worker
  CHECK(labels_1 == labels_2);
  std::vector<int> per_class(3);
  for (std::int64_t l : labels_1) {
    REQUIRE(l >= 0);
    REQUIRE(l < 3);
    ++per_class[l];
  }
  CHECK(per_class == std::vector<int>{2, 2, 2});
  // Normalized pixels lie within (0 - 0.485) / 0.229 and (1 - 0.406) / 0.225.
  float lo = one[0], hi = one[0];
  for (float v : one) lo = std::min(lo, v), hi = std::max(hi, v);
  CHECK(lo >= -2.12f);
  CHECK(hi <= 2.65f);
  CHECK(hi - lo > 3.0f);
}

TEST_CASE("a corrupt image in a pipeline fails naming the file") {
  if (!sluice::ops::test::have_pillow_images()) return;
  const Tree tree(SLUICE_EXAMPLES_DIR "/imagenet.lua", {{"a", "hopper.jpg"}, {"b", "truncated_jpeg.jpg"}});
  try {
    std::vector<std::int64_t> labels;
    sluice::Script script = sluice::load_script({.path = tree.pipeline(), .workers = 1});
    script.options.batch_size = 2;
    sluice::Loader loader(script.options);
    while (loader.next()) {
    }
    FAIL("the truncated JPEG was accepted");
  } catch (const sluice::Error& e) {
    const std::string message = e.what();
    INFO(message);
    CHECK(message.find("truncated_jpeg.jpg: truncated JPEG") != std::string::npos);
  }
}

namespace {

// Decodes every file of train/ in 1 worker, in order, under on_error = "skip".
const char* const kSkipPipeline = R"(
local sluice = require("sluice")
local image = require("sluice.image")
return sluice.pipeline {
  source = sluice.folders("train"),
  map = function(s, ctx)
    local img = image.decode(s.bytes, { name = s.path, channels = 3 })
    image.resize(img, ctx.out.image)
    return { image = ctx.out.image, label = s.label }
  end,
  fields = { { "image", "uint8", { 32, 32, 3 } }, { "label", "int64" } },
  batch_size = 16, shuffle = false, workers = 1, on_error = "skip",
}
)";

struct SkipRun {
  std::vector<std::uint8_t> pixels;
  std::vector<std::uint64_t> skipped;
};

SkipRun run_skip_pipeline(const std::vector<std::pair<std::string, std::vector<std::uint8_t>>>& files) {
  sluice::ops::test::TempDir dir;
  std::ofstream(dir.file("pipeline.lua")) << kSkipPipeline;
  fs::create_directories(dir.file("train/a"));
  for (const auto& [name, bytes] : files) sluice::ops::test::write_bytes(dir.file("train/a/" + name), bytes);
  sluice::Script script = sluice::load_script({.path = dir.file("pipeline.lua"), .epochs = 1, .workers = 1});
  sluice::Loader loader(script.options);
  SkipRun run;
  while (auto batch = loader.next()) {
    const auto px = batch->field("image").as<const std::uint8_t>();
    run.pixels.insert(run.pixels.end(), px.begin(), px.end());
  }
  run.skipped = loader.stats().skipped_samples;
  return run;
}

}  // namespace

TEST_CASE("a corrupt JPEG under on_error = skip does not poison the worker's decoder") {
  if (!sluice::ops::test::have_pillow_images()) return;
  using sluice::ops::test::pillow_file;
  const auto hopper = pillow_file("hopper.jpg"), sample = pillow_file("pil_sample_rgb.jpg");
  const auto truncated = pillow_file("truncated_jpeg.jpg");
  // The issue's folder: good, bad header, good, truncated, good.
  const SkipRun with_bad = run_skip_pipeline({{"1.jpg", hopper},
                                              {"2.jpg", sluice::ops::test::bogus_huffman(hopper)},
                                              {"3.jpg", sample},
                                              {"4.jpg", truncated},
                                              {"5.jpg", hopper}});
  const SkipRun good_only = run_skip_pipeline({{"1.jpg", hopper}, {"3.jpg", sample}, {"5.jpg", hopper}});
  CHECK(with_bad.skipped == std::vector<std::uint64_t>{1, 3});
  CHECK(good_only.skipped.empty());
  REQUIRE(good_only.pixels.size() == 3u * 32 * 32 * 3);
  CHECK(with_bad.pixels == good_only.pixels);
}
