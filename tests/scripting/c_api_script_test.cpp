// The C API's pipeline-script entry points: sluice_loader_open_script with
// "name=value" overrides, resume through sluice_script_options, and the skip
// report of a script run with on_error = skip.
#include <catch2/catch.hpp>

#include <dlpack/dlpack.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "sluice/sluice.h"
#include "support.h"

using Catch::Matchers::Contains;

namespace {

// 45 samples of an int64 id and a 2x3 float32 block; samples 13 and 27 fail.
const char* const kScript = R"(
local sluice = require("sluice")
return sluice.pipeline {
  source = sluice.range(45),
  batch_size = 8,
  shuffle = true,
  seed = 5,
  fields = { { "id", "int64" }, { "block", "float32", { 2, 3 } } },
  map = function(i, ctx)
    if i == 13 or i == 27 then error("sample " .. i .. " is bad") end
    local block = ctx.out.block
    for k = 0, 5 do block.data[k] = i + k / 10 end
    return { id = i, block = block }
  end,
  workers = 2,
}
)";

struct Run {
  std::vector<std::vector<std::uint64_t>> batches;
  std::uint64_t samples = 0;
};

// Reads every remaining batch, checking each field against its sample id.
Run drain(sluice_loader* loader) {
  Run run;
  sluice_batch* b = nullptr;
  sluice_status s;
  while ((s = sluice_loader_next(loader, &b)) == SLUICE_OK) {
    const std::uint64_t* ids = sluice_batch_sample_ids(b);
    const std::size_t n = sluice_batch_size(b);
    sluice_field id, block;
    REQUIRE(sluice_batch_field_by_name(b, "id", &id, nullptr) == SLUICE_OK);
    REQUIRE(sluice_batch_field(b, 1, &block) == SLUICE_OK);
    REQUIRE(std::string(block.name) == "block");
    REQUIRE(block.dtype == SLUICE_F32);
    REQUIRE((block.ndim == 3 && block.shape[0] == static_cast<std::int64_t>(n) && block.shape[2] == 3));
    for (std::size_t j = 0; j < n; ++j) {
      REQUIRE(static_cast<std::uint64_t>(static_cast<const std::int64_t*>(id.data)[j]) == ids[j]);
      REQUIRE(static_cast<const float*>(block.data)[j * 6 + 5] == static_cast<float>(ids[j] + 0.5));
    }
    run.batches.emplace_back(ids, ids + n);
    run.samples += n;
    sluice_batch_release(b);
  }
  INFO(sluice_last_error());
  REQUIRE(s == SLUICE_END);
  return run;
}

}  // namespace

TEST_CASE("C API: a pipeline.lua with overrides, every batch, the skip report", "[c_api][script]") {
  sluice::test::TempDir dir;
  const std::string script = dir.write("pipeline.lua", kScript);
  const char* const overrides[] = {"on_error=skip", "epochs=2", "workers=3", nullptr};
  sluice_loader* loader = nullptr;
  INFO(sluice_last_error());
  REQUIRE(sluice_loader_open_script(script.c_str(), overrides, &loader) == SLUICE_OK);
  REQUIRE(sluice_loader_field_count(loader) == 2);

  const Run run = drain(loader);
  REQUIRE(run.samples == 2 * (45 - 2));  // both epochs, without the two bad samples
  for (const auto& batch : run.batches) {
    for (std::uint64_t id : batch) REQUIRE((id != 13 && id != 27));
  }

  sluice_stats stats;
  stats.size = sizeof stats;
  REQUIRE(sluice_loader_stats(loader, &stats) == SLUICE_OK);
  REQUIRE(stats.samples_delivered == run.samples);
  REQUIRE(stats.batches_delivered == run.batches.size());
  REQUIRE(stats.skipped_count == 2);
  std::vector<std::uint64_t> skipped(stats.skipped_samples, stats.skipped_samples + 2);
  std::sort(skipped.begin(), skipped.end());
  REQUIRE(skipped == std::vector<std::uint64_t>{13, 27});
  for (std::size_t i = 0; i < 2; ++i) {
    CHECK_THAT(stats.skip_reasons[i], Contains("sample " + std::to_string(stats.skipped_samples[i]) + " is bad"));
  }
  char* log = nullptr;
  REQUIRE(sluice_loader_skip_log(loader, &log) == SLUICE_OK);
  const std::string text = log;
  sluice_free(log);
  CHECK_THAT(text, Contains("{\"sample\":13,\"reason\":") && Contains("{\"sample\":27,\"reason\":"));
  REQUIRE(std::count(text.begin(), text.end(), '\n') == 2);

  // DLPack from a script's batch: the run is over, so a fresh loader.
  sluice_loader_destroy(loader);
  REQUIRE(sluice_loader_open_script(script.c_str(), overrides, &loader) == SLUICE_OK);
  sluice_batch* b = nullptr;
  REQUIRE(sluice_loader_next(loader, &b) == SLUICE_OK);
  DLManagedTensor* t = nullptr;
  REQUIRE(sluice_batch_field_dlpack(b, 1, &t) == SLUICE_OK);
  REQUIRE(t->dl_tensor.ndim == 3);
  REQUIRE((t->dl_tensor.dtype.code == kDLFloat && t->dl_tensor.dtype.bits == 32));
  sluice_batch_release(b);
  sluice_loader_destroy(loader);  // the tensor outlives the loader too
  REQUIRE(static_cast<const float*>(t->dl_tensor.data)[0] >= 0.0f);
  t->deleter(t);
}

TEST_CASE("C API: overrides are checked by name and value", "[c_api][script]") {
  sluice::test::TempDir dir;
  const std::string script = dir.write("pipeline.lua", kScript);
  sluice_loader* loader = reinterpret_cast<sluice_loader*>(&dir);  // must be reset to NULL on failure

  const char* const unknown[] = {"workers=2", "wrokers=3", nullptr};
  REQUIRE(sluice_loader_open_script(script.c_str(), unknown, &loader) == SLUICE_INVALID_ARGUMENT);
  REQUIRE(loader == nullptr);
  CHECK_THAT(sluice_last_error(), Contains("unknown setting 'wrokers'") && Contains("workers"));

  const char* const bad_value[] = {"workers=many", nullptr};
  REQUIRE(sluice_loader_open_script(script.c_str(), bad_value, &loader) == SLUICE_INVALID_ARGUMENT);
  CHECK_THAT(sluice_last_error(), Contains("workers") && Contains("'many'"));

  const char* const no_equals[] = {"epochs", nullptr};
  REQUIRE(sluice_loader_open_script(script.c_str(), no_equals, &loader) == SLUICE_INVALID_ARGUMENT);
  CHECK_THAT(sluice_last_error(), Contains("not of the form name=value"));

  // Without on_error = skip, the failing sample 13 stops the run, naming it.
  REQUIRE(sluice_loader_open_script(script.c_str(), nullptr, &loader) == SLUICE_OK);
  sluice_batch* b = nullptr;
  sluice_status s;
  while ((s = sluice_loader_next(loader, &b)) == SLUICE_OK) sluice_batch_release(b);
  REQUIRE(s == SLUICE_ERROR);
  CHECK_THAT(sluice_last_error(), Contains("is bad"));
  sluice_loader_destroy(loader);

  const std::string broken = dir.write("broken.lua", "return sluice.pipeline {");
  REQUIRE(sluice_loader_open_script(broken.c_str(), nullptr, &loader) == SLUICE_ERROR);
  CHECK_THAT(sluice_last_error(), Contains("broken.lua"));
  REQUIRE(sluice_loader_open_script("/nonexistent/pipeline.lua", nullptr, &loader) == SLUICE_ERROR);
  REQUIRE(sluice_loader_open_script(nullptr, nullptr, &loader) == SLUICE_INVALID_ARGUMENT);
}

TEST_CASE("C API: a script run resumes exactly from its state JSON", "[c_api][script][state]") {
  sluice::test::TempDir dir;
  const std::string script = dir.write("pipeline.lua", kScript);
  const char* const overrides[] = {"on_error=skip", "epochs=2", "ordered=false", nullptr};
  sluice_loader* loader = nullptr;
  REQUIRE(sluice_loader_open_script(script.c_str(), overrides, &loader) == SLUICE_OK);
  Run whole = drain(loader);
  sluice_loader_destroy(loader);

  REQUIRE(sluice_loader_open_script(script.c_str(), overrides, &loader) == SLUICE_OK);
  Run resumed;
  for (int i = 0; i < 7; ++i) {  // into the second epoch
    sluice_batch* b = nullptr;
    REQUIRE(sluice_loader_next(loader, &b) == SLUICE_OK);
    resumed.batches.emplace_back(sluice_batch_sample_ids(b), sluice_batch_sample_ids(b) + sluice_batch_size(b));
    sluice_batch_release(b);
  }
  char* json = nullptr;
  REQUIRE(sluice_loader_state_json(loader, &json) == SLUICE_OK);
  sluice_loader_destroy(loader);

  sluice_script_options options;
  sluice_script_options_init(&options);
  options.overrides = overrides;
  options.resume_json = json;
  REQUIRE(sluice_loader_open_script_with(script.c_str(), &options, &loader) == SLUICE_OK);
  sluice_free(json);
  for (auto& batch : drain(loader).batches) resumed.batches.push_back(std::move(batch));
  sluice_loader_destroy(loader);

  // Unordered delivery may interleave batches differently; the samples of
  // each epoch, as sets of batches, are what a resume must reproduce.
  auto sorted = [](std::vector<std::vector<std::uint64_t>> v) {
    std::sort(v.begin(), v.end());
    return v;
  };
  REQUIRE(sorted(resumed.batches) == sorted(whole.batches));
  REQUIRE(resumed.batches.size() == whole.batches.size());
}
