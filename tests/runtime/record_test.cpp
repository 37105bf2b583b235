// Run records and verify, launcher detection, tower shards.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sys/wait.h>
#include <unistd.h>

#include "sluice/error.h"
#include "sluice/launcher.h"
#include "sluice/loader.h"
#include "sluice/producer.h"
#include "sluice/record.h"

using namespace sluice;
namespace fs = std::filesystem;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    char pattern[] = "/tmp/sluice-test-XXXXXX";
    path = mkdtemp(pattern);
  }
  ~TempDir() { fs::remove_all(path); }
};

Options record_options(std::uint64_t seed, std::uint32_t workers, bool ordered) {
  Options o;
  o.dataset_size = 300;
  o.batch_size = 32;
  o.shuffle = true;
  o.seed = seed;
  o.epochs = 2;
  o.workers = workers;
  o.ordered = ordered;
  o.fields = {{"x", DType::f32, {4}}};
  o.producer = per_sample([](const SampleRef& s) {
    if (s.index % 9 == 0) usleep(300);
    for (int k = 0; k < 4; ++k) s.as<float>(0)[k] = static_cast<float>(s.index) + 0.25f * static_cast<float>(k);
  });
  return o;
}

void record_run(const Options& o, const fs::path& path, std::size_t max_batches = ~std::size_t{0}) {
  RunRecorder recorder(path.string(), RecordHeader{"", "{}", o.seed, o.rank, o.world_size, {}});
  Loader loader(o);
  std::size_t n = 0;
  while (n < max_batches) {
    auto b = loader.next();
    if (!b) break;
    recorder.record(*b);
    ++n;
  }
  recorder.close();
}

}  // namespace

TEST_CASE("runs with different worker counts and ordering verify identical", "[record]") {
  TempDir dir;
  record_run(record_options(5, 1, true), dir.path / "a.jsonl");
  record_run(record_options(5, 4, false), dir.path / "b.jsonl");
  VerifyResult r = verify_records((dir.path / "a.jsonl").string(), (dir.path / "b.jsonl").string());
  INFO(r.message);
  REQUIRE(r.identical);
  REQUIRE(r.batches_compared == 20);
}

TEST_CASE("verify names the first batch that differs and how", "[record]") {
  TempDir dir;
  const auto a = (dir.path / "a.jsonl").string(), b = (dir.path / "b.jsonl").string();
  record_run(record_options(5, 2, true), a);

  SECTION("another seed: different samples") {
    record_run(record_options(6, 2, true), b);
    VerifyResult r = verify_records(a, b);
    REQUIRE_FALSE(r.identical);
    REQUIRE_THAT(r.message, Catch::Contains("epoch 0, batch 0") && Catch::Contains("samples differ"));
  }
  SECTION("same samples, other content") {
    Options o = record_options(5, 2, true);
    o.producer = per_sample([](const SampleRef& s) {
      for (int k = 0; k < 4; ++k) s.as<float>(0)[k] = s.index == 250 ? -1.0f : static_cast<float>(s.index) + 0.25f * k;
    });
    record_run(o, b);
    VerifyResult r = verify_records(a, b);
    REQUIRE_FALSE(r.identical);
    REQUIRE_THAT(r.message, Catch::Contains("content differs") && Catch::Contains("field 'x'"));
  }
  SECTION("a shorter run") {
    record_run(record_options(5, 2, true), b, 7);
    VerifyResult r = verify_records(a, b);
    REQUIRE_FALSE(r.identical);
    REQUIRE_THAT(r.message, Catch::Contains("has 20 batches") && Catch::Contains("the first 7 are identical"));
  }
  SECTION("not a record") {
    std::ofstream(b) << "hello\n";
    REQUIRE_THROWS_WITH(verify_records(a, b), Catch::Contains(b + ":1"));
  }
}

TEST_CASE("rank and world size come from torchrun, Open MPI, PMI or SLURM", "[launcher]") {
  const char* vars[] = {"RANK", "WORLD_SIZE", "LOCAL_RANK", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
                        "OMPI_COMM_WORLD_LOCAL_RANK", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "SLURM_PROCID",
                        "SLURM_NTASKS", "SLURM_LOCALID"};
  for (const char* v : vars) unsetenv(v);
  REQUIRE(detect_launch().launcher == "none");
  REQUIRE(detect_launch().world_size == 1);

  setenv("SLURM_PROCID", "5", 1);
  setenv("SLURM_NTASKS", "8", 1);
  setenv("SLURM_LOCALID", "1", 1);
  Launch l = detect_launch();
  REQUIRE(l.launcher == "slurm");
  REQUIRE(l.rank == 5);
  REQUIRE(l.world_size == 8);
  REQUIRE(l.local_rank == 1);

  setenv("OMPI_COMM_WORLD_RANK", "2", 1);
  setenv("OMPI_COMM_WORLD_SIZE", "3", 1);
  REQUIRE(detect_launch().launcher == "openmpi");  // MPI before SLURM

  setenv("RANK", "1", 1);
  setenv("WORLD_SIZE", "4", 1);
  setenv("LOCAL_RANK", "1", 1);
  l = detect_launch();
  REQUIRE(l.launcher == "torchrun");
  Options o;
  apply_launch(o, l);
  REQUIRE(o.rank == 1);
  REQUIRE(o.world_size == 4);

  setenv("RANK", "4", 1);
  REQUIRE_THROWS_WITH(detect_launch(), Catch::Contains("RANK=4") && Catch::Contains("WORLD_SIZE=4"));
  setenv("RANK", "x", 1);
  REQUIRE_THROWS_WITH(detect_launch(), Catch::Contains("RANK='x'"));
  for (const char* v : vars) unsetenv(v);
}

TEST_CASE("towers of one process get disjoint samples and equal batch counts", "[launcher]") {
  Options base = record_options(1, 1, true);
  base.rank = 1;
  base.world_size = 2;
  base.epochs = 1;
  std::set<std::uint64_t> seen;
  std::uint64_t batches0 = 0;
  for (std::uint32_t t = 0; t < 3; ++t) {
    Options o = tower_options(base, t, 3);
    REQUIRE(o.rank == 3 + t);
    REQUIRE(o.world_size == 6);
    Loader loader(o);
    std::uint64_t batches = 0;
    while (auto b = loader.next()) {
      ++batches;
      for (std::uint64_t id : b->sample_ids()) REQUIRE(seen.insert(id).second);
    }
    if (t == 0) batches0 = batches;
    REQUIRE(batches == batches0);
  }
  REQUIRE(seen.size() == 150);  // three of the six shards of 300
  REQUIRE_THROWS_AS(tower_options(base, 3, 3), Error);
}

TEST_CASE("a forked child's copy of a recorder writes nothing to the parent's record", "[record][fork]") {
  TempDir dir;
  const fs::path path = dir.path / "run.jsonl";
  const Options o = record_options(3, 1, true);
  auto recorder = std::make_unique<RunRecorder>(path.string(), RecordHeader{"", "{}", o.seed, o.rank, o.world_size, {}});
  Loader loader(o);
  recorder->record(*loader.next());  // buffered, not yet on disk
  const pid_t child = fork();
  if (child == 0) {
    recorder.reset();  // as a garbage collector in the child would
    _exit(0);
  }
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  REQUIRE((WIFEXITED(status) && WEXITSTATUS(status) == 0));
  while (auto b = loader.next()) recorder->record(*b);
  recorder->close();
  std::ifstream in(path);
  std::set<std::string> lines;
  std::size_t count = 0;
  for (std::string line; std::getline(in, line); ++count) lines.insert(line);
  REQUIRE(count == 1 + 2 * 10);  // the header and 2 epochs of 10 batches, each once
  REQUIRE(lines.size() == count);
}

TEST_CASE("a record whose last line a killed run cut off is compared without it, and says so", "[record]") {
  TempDir dir;
  const auto a = (dir.path / "a.jsonl").string(), b = (dir.path / "b.jsonl").string();
  record_run(record_options(5, 1, true), a);
  record_run(record_options(5, 2, true), b);
  fs::resize_file(b, fs::file_size(b) - 40);  // inside the last batch's line: no newline after it
  VerifyResult r = verify_records(a, b);
  INFO(r.message);
  REQUIRE(r.notes.size() == 1);
  CHECK_THAT(r.notes[0], Catch::Matchers::Contains(b + ":21: the last line is cut off"));
  CHECK(r.batches_compared == 19);

  // A line cut in the middle of the file is damage, not a stopped run.
  std::ifstream in(b);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  text.insert(text.find('\n', text.find('\n') + 1), "\n{\"epoch\":");
  std::ofstream(b) << text;
  CHECK_THROWS_WITH(verify_records(a, b), Catch::Matchers::Contains(b + ":3: "));
}

TEST_CASE("JSON strings with bytes that are not UTF-8 stay valid JSON and parse back to the bytes", "[record]") {
  // A Latin-1 file name (caf\xe9), a valid 2-byte character, a cut 3-byte one.
  const std::string name = "/data/caf\xe9/\xc3\xa9t\xc3\xa9-\xe4\xb8";
  const std::string json = sluice::json_string(name);
  CHECK(json == "\"/data/caf\\udce9/\xc3\xa9t\xc3\xa9-\\udce4\\udcb8\"");
  // Python's json reads it (surrogateescape gives the bytes back: os.fsencode).
  const std::string py = "/usr/bin/python3 -c 'import json,os,sys; s=json.loads(sys.argv[1]); "
                         "sys.exit(0 if os.fsencode(s) == b\"/data/caf\\xe9/\\xc3\\xa9t\\xc3\\xa9-\\xe4\\xb8\" else 1)' '" +
                         json + "'";
  if (std::system("/usr/bin/python3 -c 'import json' 2>/dev/null") == 0) CHECK(std::system(py.c_str()) == 0);
}
