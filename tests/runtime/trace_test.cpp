// Options::trace: the Chrome trace-event JSON of a run, parsed back: tracks
// named, one fill span per batch filled, skips and restarts as instants, the
// slots as a counter, and the size bounded however long the run.
#include <catch2/catch.hpp>

#include <signal.h>
#include <unistd.h>

#include <map>
#include <stdexcept>
#include <string>

#include "json.h"
#include "sluice/error.h"
#include "sluice/loader.h"
#include "sluice/producer.h"

using namespace sluice;
using sluice::detail::JsonValue;

namespace {

Options traced(std::uint64_t n, std::uint32_t batch, std::uint32_t workers, std::uint32_t sleep_us = 0) {
  Options o;
  o.dataset_size = n;
  o.batch_size = batch;
  o.workers = workers;
  o.trace = true;
  o.fields = {{"id", DType::i64, {}}};
  o.producer = per_sample([sleep_us](const SampleRef& s) {
    if (s.index == 7) throw std::runtime_error("sample 7 is broken");
    if (sleep_us) usleep(sleep_us);
    *s.as<std::int64_t>(0) = static_cast<std::int64_t>(s.index);
  });
  return o;
}

struct Summary {
  std::map<std::string, int> by_name;          // events by name
  std::map<std::string, int> tracks;           // thread_name -> tid
  std::uint64_t fill_samples = 0;
  std::vector<std::uint64_t> skipped;
};

Summary summarize(const std::string& json) {
  const JsonValue doc = sluice::detail::parse_json(json);
  Summary s;
  for (const JsonValue& e : doc.at("traceEvents").as_array("traceEvents")) {
    const std::string& name = e.at("name").as_string("name");
    const std::string& ph = e.at("ph").as_string("ph");
    REQUIRE(e.find("pid") != nullptr);
    REQUIRE(e.find("tid") != nullptr);
    ++s.by_name[name];
    if (ph == "M" && name == "thread_name") {
      s.tracks[e.at("args").at("name").as_string("name")] = static_cast<int>(e.at("tid").as_u64("tid"));
    } else if (ph == "X") {
      REQUIRE(e.find("ts") != nullptr);
      REQUIRE(e.find("dur") != nullptr);
      if (name == "fill") {
        s.fill_samples += e.at("args").at("samples").as_u64("samples");
        REQUIRE(e.at("args").find("epoch") != nullptr);
        REQUIRE(e.at("args").find("batch") != nullptr);
        REQUIRE(e.at("tid").as_u64("tid") >= 1);  // a worker's track
      }
    } else if (name == "sample skipped") {
      REQUIRE(ph == "i");
      s.skipped.push_back(e.at("args").at("sample").as_u64("sample"));
    } else if (name == "slots") {
      REQUIRE(ph == "C");
    }
  }
  return s;
}

}  // namespace

TEST_CASE("a traced run has a track per worker, a fill per batch, skips and slot counts", "[trace]") {
  Options o = traced(200, 4, 3);
  o.on_error = OnError::skip;
  Loader loader(o);
  std::uint64_t batches = 0;
  while (auto b = loader.next()) ++batches;
  REQUIRE(batches == 50);
  Summary s = summarize(loader.trace_json());
  CHECK(s.tracks.count("consumer (next)") == 1);
  for (const char* w : {"worker 0", "worker 1", "worker 2"}) CHECK(s.tracks.count(w) == 1);
  CHECK(s.by_name["fill"] == 50);             // each batch once, sample 7's again after the skip
  CHECK(s.by_name["fill (failed)"] == 1);     // the fill that threw
  CHECK(s.fill_samples == 199);
  CHECK(s.skipped == std::vector<std::uint64_t>{7});
  CHECK(s.by_name["slots"] >= 2);
  CHECK(s.by_name["wait for a batch"] >= 1);  // the first batch at least
}

TEST_CASE("a traced run shows a worker's restart", "[trace]") {
  Options o = traced(400, 4, 2, 2000);
  o.on_error = OnError::skip;
  Loader loader(o);
  std::uint64_t batches = 0;
  while (auto b = loader.next()) {
    if (++batches == 5) REQUIRE(kill(loader.worker_pids()[0], SIGKILL) == 0);
  }
  REQUIRE(batches == 100);
  Summary s = summarize(loader.trace_json());
  CHECK(s.by_name["worker restart"] == 1);
  CHECK(s.by_name["fill"] >= 100);  // a batch filled but not reported before the kill is filled again
}

TEST_CASE("a trace keeps each worker's last 4096 fills", "[trace]") {
  Options o = traced(5000, 1, 1);
  o.on_error = OnError::skip;
  Loader loader(o);
  while (auto b = loader.next()) {
  }
  Summary s = summarize(loader.trace_json());
  CHECK(s.by_name["fill"] == 4096);
  CHECK(s.by_name["fill"] + s.by_name["fill (failed)"] <= 4096);
}

TEST_CASE("trace_json without options.trace says so", "[trace]") {
  Options o = traced(8, 4, 1);
  o.trace = false;
  o.on_error = OnError::skip;
  Loader loader(o);
  REQUIRE_THROWS_WITH(loader.trace_json(), Catch::Contains("options.trace"));
}
