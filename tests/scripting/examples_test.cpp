// The shipped examples load, deliver batches of the declared shapes, and
// compute what they say they compute.
#include <catch2/catch.hpp>

#include "skip.h"

#include <cmath>
#include <cstring>
#include <filesystem>

#include "sluice/loader.h"
#include "sluice/script.h"

namespace {

sluice::Script example(const char* name) {
  return sluice::load_script({.path = std::string(SLUICE_EXAMPLES_DIR) + "/" + name, .workers = 2});
}

std::vector<std::int64_t> shape_of(const sluice::FieldView& v) { return {v.shape.begin(), v.shape.end()}; }

}  // namespace

TEST_CASE("quickstart delivers labelled images", "[examples]") {
  sluice::Script s = example("quickstart.lua");
  sluice::Loader loader(s.options);
  auto batch = loader.next();
  REQUIRE(batch);
  CHECK(shape_of(batch->field("image")) == std::vector<std::int64_t>{64, 3, 32, 32});
  const auto labels = batch->field("label").as<const std::int64_t>();
  for (std::size_t j = 0; j < batch->size(); ++j) {
    CHECK(labels[j] == static_cast<std::int64_t>(batch->sample_ids()[j] % 10));
  }
}

TEST_CASE("image augmentation gives normalized float32 CHW crops", "[examples]") {
  sluice::Script s = example("image_augment.lua");
  s.options.batch_size = 4;
  sluice::Loader loader(s.options);
  auto batch = loader.next();
  REQUIRE(batch);
  CHECK(shape_of(batch->field("image")) == std::vector<std::int64_t>{4, 3, 224, 224});
  const auto px = batch->field("image").as<const float>();
  float lo = px[0], hi = px[0];
  for (float v : px) {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  CHECK(lo >= -2.2f);  // (0 - 0.485) / 0.229 = -2.12
  CHECK(hi <= 2.7f);   // (1 - 0.406) / 0.225 = 2.64
  CHECK(hi - lo > 1.0f);
}

TEST_CASE("chess decodes boards, flags and the combined score", "[examples]") {
  sluice::Script s = example("chess.lua");
  s.options.batch_size = 256;
  sluice::Loader loader(s.options);
  auto batch = loader.next();
  REQUIRE(batch);
  CHECK(shape_of(batch->field("board")) == std::vector<std::int64_t>{256, 8, 8, 24});
  CHECK(shape_of(batch->field("flags")) == std::vector<std::int64_t>{256, 10});
  const auto board = batch->field("board").as<const float>();
  const auto target = batch->field("target").as<const float>();
  for (std::size_t j = 0; j < batch->size(); ++j) {
    int own = 0, theirs = 0;
    for (int square = 0; square < 64; ++square) {
      for (int plane = 0; plane < 24; ++plane) {
        const float v = board[j * 1536 + square * 24 + plane];
        if (plane < 12) {
          CHECK((v == 0.0f || v == 1.0f));
          own += v == 1.0f;
        } else {
          CHECK((v == 0.0f || v == -1.0f));
          theirs += v == -1.0f;
        }
      }
    }
    CHECK(own + theirs > 0);
    CHECK(own + theirs <= 26);
    CHECK(std::abs(target[j]) <= 1.0f);
  }
}

TEST_CASE("tfrecord reads tf.train.Example features into typed fields", "[examples]") {
  if (!std::filesystem::exists(std::string(SLUICE_EXAMPLES_DIR) +
                               "/../../shared/data/tfrecord/pytorch-data/example.tfrecord")) {
    SKIP_TEST("../shared/data is absent (examples/tfrecord.lua reads its example.tfrecord)");
  }
  sluice::Script s = example("tfrecord.lua");
  REQUIRE(s.options.dataset_size == 4);
  s.options.epochs = 1;
  sluice::Loader loader(s.options);
  std::size_t samples = 0;
  while (auto batch = loader.next()) {
    const auto x = batch->field("x").as<const float>();
    const auto x_int = batch->field("x_int").as<const std::int32_t>();
    const auto tag = batch->field("tag_length").as<const std::int32_t>();
    for (std::size_t j = 0; j < batch->size(); ++j) {
      CHECK(x[j * 10] == static_cast<float>(10 * batch->sample_ids()[j]));
      for (std::size_t k = 0; k < 10; ++k) CHECK(x_int[j * 10 + k] == static_cast<std::int32_t>(x[j * 10 + k] * 10));
      CHECK(tag[j] == 8);
      ++samples;
    }
  }
  CHECK(samples == 4);
}
