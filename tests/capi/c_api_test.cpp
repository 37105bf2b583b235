#include <catch2/catch.hpp>

#include <dlpack/dlpack.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "sluice/options.h"
#include "sluice/sluice.h"
#include "test_support.h"

namespace {

// Writes each sample's index into an int64 field and its square into a float64 one.
int fill_squares(void* user, const sluice_fill* b, char* error, size_t error_size) {
  const std::uint64_t poison = *static_cast<const std::uint64_t*>(user);
  auto* ids = static_cast<int64_t*>(b->data[0]);
  auto* squares = static_cast<double*>(b->data[1]);
  for (size_t j = 0; j < b->size; ++j) {
    if (b->samples[j] == poison) {
      std::snprintf(error, error_size, "sample %llu is poison", static_cast<unsigned long long>(poison));
      return 1;
    }
    ids[j] = static_cast<int64_t>(b->samples[j]);
    squares[j] = static_cast<double>(b->samples[j]) * static_cast<double>(b->samples[j]);
  }
  return 0;
}

sluice_options square_options(const sluice_field_spec* fields, std::uint64_t* poison) {
  sluice_options o;
  sluice_options_init(&o);
  o.dataset_size = 50;
  o.batch_size = 8;
  o.workers = 2;
  o.field_count = 2;
  o.fields = fields;
  o.fill = fill_squares;
  o.user = poison;
  return o;
}

// As fill_squares, but each batch takes *user milliseconds.
int fill_slowly(void* user, const sluice_fill* b, char* error, size_t error_size) {
  usleep(static_cast<useconds_t>(*static_cast<const int*>(user)) * 1000);
  std::uint64_t never = ~0ULL;
  return fill_squares(&never, b, error, error_size);
}

// The sample ids of every remaining batch, in delivery order.
std::vector<std::vector<uint64_t>> drain(sluice_loader* loader) {
  std::vector<std::vector<uint64_t>> batches;
  sluice_batch* b = nullptr;
  sluice_status s;
  while ((s = sluice_loader_next(loader, &b)) == SLUICE_OK) {
    const uint64_t* ids = sluice_batch_sample_ids(b);
    batches.emplace_back(ids, ids + sluice_batch_size(b));
    sluice_batch_release(b);
  }
  INFO(sluice_last_error());
  REQUIRE(s == SLUICE_END);
  return batches;
}

const int64_t* dl_ids(const DLManagedTensor* t) { return static_cast<const int64_t*>(t->dl_tensor.data); }

}  // namespace

TEST_CASE("the C API delivers every batch with its fields", "[c_api]") {
  const sluice_field_spec fields[] = {{"id", SLUICE_I64, 0, nullptr}, {"square", SLUICE_F64, 0, nullptr}};
  std::uint64_t poison = ~0ULL;
  sluice_options o = square_options(fields, &poison);
  sluice_loader* loader = nullptr;
  REQUIRE(sluice_loader_create(&o, &loader) == SLUICE_OK);
  std::uint64_t samples = 0, batches = 0;
  sluice_batch* b = nullptr;
  sluice_status s;
  while ((s = sluice_loader_next(loader, &b)) == SLUICE_OK) {
    REQUIRE(sluice_batch_index(b) == batches++);
    REQUIRE(sluice_batch_field_count(b) == 2);
    sluice_field f;
    REQUIRE(sluice_batch_field(b, 1, &f) == SLUICE_OK);
    REQUIRE(std::string(f.name) == "square");
    REQUIRE(f.ndim == 1);
    REQUIRE(f.shape[0] == static_cast<int64_t>(sluice_batch_size(b)));
    const uint64_t* ids = sluice_batch_sample_ids(b);
    for (size_t j = 0; j < sluice_batch_size(b); ++j) {
      REQUIRE(static_cast<double*>(f.data)[j] == static_cast<double>(ids[j] * ids[j]));
    }
    samples += sluice_batch_size(b);
    sluice_batch_release(b);
  }
  REQUIRE(s == SLUICE_END);
  REQUIRE(samples == 50);
  sluice_field f;
  REQUIRE(sluice_batch_field(nullptr, 0, &f) == SLUICE_INVALID_ARGUMENT);
  sluice_loader_destroy(loader);
  REQUIRE(sluice::test::descendants(getpid()).empty());
}

TEST_CASE("C API errors are status codes with a message", "[c_api]") {
  const sluice_field_spec fields[] = {{"id", SLUICE_I64, 0, nullptr}, {"square", SLUICE_F64, 0, nullptr}};
  std::uint64_t poison = 21;
  sluice_options o = square_options(fields, &poison);
  sluice_loader* loader = nullptr;
  REQUIRE(sluice_loader_create(&o, &loader) == SLUICE_OK);
  sluice_batch* b = nullptr;
  sluice_status s;
  while ((s = sluice_loader_next(loader, &b)) == SLUICE_OK) sluice_batch_release(b);
  REQUIRE(s == SLUICE_ERROR);
  REQUIRE(std::string(sluice_last_error()).find("sample 21 is poison") != std::string::npos);
  sluice_loader_destroy(loader);

  // An option the runtime refuses is the caller's: INVALID_ARGUMENT, naming it.
  o.dataset_size = 0;
  REQUIRE(sluice_loader_create(&o, &loader) == SLUICE_INVALID_ARGUMENT);
  REQUIRE(std::string(sluice_last_error()).find("dataset_size") != std::string::npos);
  o = square_options(fields, &poison);
  const std::pair<void (*)(sluice_options&), const char*> refused[] = {
      {[](sluice_options& x) { x.batch_size = 0; }, "options.batch_size is 0"},
      {[](sluice_options& x) { x.workers = 0; }, "options.workers is 0"},
      {[](sluice_options& x) { x.workers = 999; }, "options.workers is 999"},
      {[](sluice_options& x) { x.rank = 2, x.world_size = 2; }, "options.rank 2 is not below options.world_size 2"},
      {[](sluice_options& x) { x.slot_bytes = 1; }, "options.slot_bytes is 1"},
      {[](sluice_options& x) { x.max_retries = 0; }, "options.max_retries is 0"},
      {[](sluice_options& x) { x.size = 0; }, "options->size is 0"},
  };
  for (const auto& [set, says] : refused) {
    sluice_options bad = o;
    set(bad);
    INFO(says);
    CHECK(sluice_loader_create(&bad, &loader) == SLUICE_INVALID_ARGUMENT);
    CHECK_THAT(sluice_last_error(), Catch::Contains(says));
    CHECK(loader == nullptr);
  }
  o.fill = nullptr;
  REQUIRE(sluice_loader_create(&o, &loader) == SLUICE_INVALID_ARGUMENT);

  // A dtype past the enum (or one that a cast to a byte would wrap onto a
  // real one) and two fields of one name are refused, naming the field.
  o = square_options(fields, &poison);
  for (const int bad : {-1, SLUICE_BOOL + 1, 268, 1000000}) {
    sluice_field_spec odd[] = {{"id", SLUICE_I64, 0, nullptr}, {"square", SLUICE_F64, 0, nullptr}};
    std::memcpy(&odd[1].dtype, &bad, sizeof bad);  // as a C host may store it (a C++ cast would be undefined)
    o.fields = odd;
    INFO(bad);
    CHECK(sluice_loader_create(&o, &loader) == SLUICE_INVALID_ARGUMENT);
    CHECK_THAT(sluice_last_error(), Catch::Contains("field 'square' has dtype " + std::to_string(bad)));
  }
  const sluice_field_spec twice[] = {{"id", SLUICE_I64, 0, nullptr}, {"id", SLUICE_F64, 0, nullptr}};
  o.fields = twice;
  CHECK(sluice_loader_create(&o, &loader) == SLUICE_INVALID_ARGUMENT);
  CHECK_THAT(sluice_last_error(), Catch::Contains("two fields are named 'id'"));
}

TEST_CASE("C API: a DLPack tensor keeps its slot alive until both the batch and the tensor let go", "[c_api][dlpack]") {
  const sluice_field_spec fields[] = {{"id", SLUICE_I64, 0, nullptr}, {"square", SLUICE_F64, 0, nullptr}};
  std::uint64_t poison = ~0ULL;
  sluice_options o = square_options(fields, &poison);
  o.dataset_size = 200;
  o.slots = 3;  // few slots: a slot given back too early would soon be filled again
  sluice_loader* loader = nullptr;
  REQUIRE(sluice_loader_create(&o, &loader) == SLUICE_OK);

  // Release the batch first, then run the deleter.
  sluice_batch* first = nullptr;
  REQUIRE(sluice_loader_next(loader, &first) == SLUICE_OK);
  DLManagedTensor* t = nullptr;
  REQUIRE(sluice_batch_field_dlpack(first, 0, &t) == SLUICE_OK);
  REQUIRE(t->dl_tensor.ndim == 1);
  REQUIRE(t->dl_tensor.shape[0] == 8);
  REQUIRE(t->dl_tensor.dtype.code == kDLInt);
  REQUIRE(t->dl_tensor.dtype.bits == 64);
  const std::vector<uint64_t> first_ids(sluice_batch_sample_ids(first), sluice_batch_sample_ids(first) + 8);
  sluice_batch_release(first);
  // Ten more batches through the two other slots; the tensor's slot is not reused.
  for (int i = 0; i < 10; ++i) {
    sluice_batch* b = nullptr;
    REQUIRE(sluice_loader_next(loader, &b) == SLUICE_OK);
    sluice_batch_release(b);
  }
  for (size_t j = 0; j < 8; ++j) REQUIRE(static_cast<uint64_t>(dl_ids(t)[j]) == first_ids[j]);
  t->deleter(t);

  // Run the deleter first, then read and release the batch.
  sluice_batch* b = nullptr;
  REQUIRE(sluice_loader_next(loader, &b) == SLUICE_OK);
  REQUIRE(sluice_batch_field_dlpack(b, 1, &t) == SLUICE_OK);
  REQUIRE(t->dl_tensor.dtype.code == kDLFloat);
  t->deleter(t);
  sluice_field f;
  size_t index = 99;
  REQUIRE(sluice_batch_field_by_name(b, "id", &f, &index) == SLUICE_OK);
  REQUIRE(index == 0);
  REQUIRE(static_cast<uint64_t>(static_cast<int64_t*>(f.data)[0]) == sluice_batch_sample_ids(b)[0]);
  sluice_batch_release(b);

  REQUIRE(sluice_batch_field_dlpack(nullptr, 0, &t) == SLUICE_INVALID_ARGUMENT);
  REQUIRE(drain(loader).size() == 25 - 12);  // every batch still comes: no slot was lost
  sluice_loader_destroy(loader);
}

TEST_CASE("C API: fields by name, loader field specs, errors for what is absent", "[c_api]") {
  const int64_t shape[] = {2, 3};
  const sluice_field_spec fields[] = {{"id", SLUICE_I64, 0, nullptr}, {"square", SLUICE_F64, 0, nullptr},
                                      {"pad", SLUICE_U8, 2, shape}};
  std::uint64_t poison = ~0ULL;
  sluice_options o = square_options(fields, &poison);
  o.field_count = 3;
  sluice_loader* loader = nullptr;
  REQUIRE(sluice_loader_create(&o, &loader) == SLUICE_OK);
  REQUIRE(sluice_loader_field_count(loader) == 3);
  sluice_field_spec spec;
  REQUIRE(sluice_loader_field(loader, 2, &spec) == SLUICE_OK);
  REQUIRE(std::string(spec.name) == "pad");
  REQUIRE(spec.dtype == SLUICE_U8);
  REQUIRE(spec.ndim == 2);
  REQUIRE((spec.shape[0] == 2 && spec.shape[1] == 3));
  REQUIRE(sluice_loader_field(loader, 3, &spec) == SLUICE_INVALID_ARGUMENT);
  REQUIRE(std::string(sluice_last_error()) == "sluice_loader_field: index 3 out of range");

  sluice_batch* b = nullptr;
  REQUIRE(sluice_loader_next(loader, &b) == SLUICE_OK);
  sluice_field f;
  size_t index = 0;
  REQUIRE(sluice_batch_field_by_name(b, "pad", &f, &index) == SLUICE_OK);
  REQUIRE(index == 2);
  REQUIRE(f.ndim == 3);
  REQUIRE((f.shape[0] == 8 && f.shape[1] == 2 && f.shape[2] == 3));
  REQUIRE(f.nbytes == 8 * 6);
  REQUIRE(sluice_batch_field_by_name(b, "nope", &f, nullptr) == SLUICE_INVALID_ARGUMENT);
  REQUIRE(std::string(sluice_last_error()) == "sluice_batch_field_by_name: no field named 'nope'");
  sluice_batch_release(b);
  sluice_loader_destroy(loader);
}

TEST_CASE("C API: the state JSON resumes a run exactly where it stopped", "[c_api][state]") {
  const sluice_field_spec fields[] = {{"id", SLUICE_I64, 0, nullptr}, {"square", SLUICE_F64, 0, nullptr}};
  std::uint64_t poison = ~0ULL;
  sluice_options o = square_options(fields, &poison);
  o.dataset_size = 100;
  o.shuffle = 1;
  o.seed = 7;
  o.epochs = 2;
  sluice_loader* loader = nullptr;
  REQUIRE(sluice_loader_create(&o, &loader) == SLUICE_OK);
  const std::vector<std::vector<uint64_t>> whole = drain(loader);
  REQUIRE(whole.size() == 2 * 13);
  sluice_loader_destroy(loader);

  // Stop after 17 batches (in the second epoch), save, resume in a new loader.
  REQUIRE(sluice_loader_create(&o, &loader) == SLUICE_OK);
  std::vector<std::vector<uint64_t>> resumed;
  for (int i = 0; i < 17; ++i) {
    sluice_batch* b = nullptr;
    REQUIRE(sluice_loader_next(loader, &b) == SLUICE_OK);
    resumed.emplace_back(sluice_batch_sample_ids(b), sluice_batch_sample_ids(b) + sluice_batch_size(b));
    sluice_batch_release(b);
  }
  char* json = nullptr;
  REQUIRE(sluice_loader_state_json(loader, &json) == SLUICE_OK);
  sluice_loader_destroy(loader);
  REQUIRE(std::string(json).find("\"epoch\":1") != std::string::npos);
  o.resume_json = json;
  REQUIRE(sluice_loader_create(&o, &loader) == SLUICE_OK);
  for (std::vector<uint64_t>& ids : drain(loader)) resumed.push_back(std::move(ids));
  sluice_loader_destroy(loader);
  REQUIRE(resumed == whole);

  // A state from another plan is refused, with the reason.
  o.seed = 8;
  REQUIRE(sluice_loader_create(&o, &loader) == SLUICE_INVALID_ARGUMENT);
  REQUIRE(std::string(sluice_last_error()).find("seed") != std::string::npos);
  o.resume_json = "{not json";
  REQUIRE(sluice_loader_create(&o, &loader) == SLUICE_INVALID_ARGUMENT);
  REQUIRE(loader == nullptr);
  sluice_free(json);

  // A caller built against version 1 (no resume_json, a smaller size) is not read past its struct.
  o.seed = 7;
  o.size = offsetof(sluice_options, resume_json);
  REQUIRE(sluice_loader_create(&o, &loader) == SLUICE_OK);
  REQUIRE(drain(loader) == whole);
  sluice_loader_destroy(loader);
}

TEST_CASE("C API: try_next says NOT_READY while a slow producer works, and ready_fd wakes a frame loop", "[c_api][poll]") {
  const sluice_field_spec fields[] = {{"id", SLUICE_I64, 0, nullptr}, {"square", SLUICE_F64, 0, nullptr}};
  int delay_ms = 150;
  sluice_options o = square_options(fields, nullptr);
  o.dataset_size = 40;
  o.fill = fill_slowly;
  o.user = &delay_ms;
  sluice_loader* loader = nullptr;
  REQUIRE(sluice_loader_create(&o, &loader) == SLUICE_OK);
  const int fd = sluice_loader_ready_fd(loader);
  REQUIRE(fd >= 0);

  sluice_batch* b = nullptr;
  REQUIRE(sluice_loader_try_next(loader, &b) == SLUICE_NOT_READY);  // no batch can be done yet
  REQUIRE(b == nullptr);
  REQUIRE(sluice_loader_next_for(loader, 1, &b) == SLUICE_NOT_READY);
  REQUIRE(sluice_loader_finished(loader) == 0);

  uint64_t samples = 0, batches = 0, not_ready = 2, frames = 0;
  sluice_status s;
  for (;;) {  // a frame loop: wait at most 16 ms for the fd, then try
    ++frames;
    pollfd p{fd, POLLIN, 0};
    REQUIRE(poll(&p, 1, 16) >= 0);
    s = sluice_loader_try_next(loader, &b);
    if (s == SLUICE_NOT_READY) {
      ++not_ready;
      continue;
    }
    if (s != SLUICE_OK) break;
    REQUIRE(sluice_batch_index(b) == batches++);
    samples += sluice_batch_size(b);
    sluice_batch_release(b);
  }
  INFO(sluice_last_error());
  REQUIRE(s == SLUICE_END);
  REQUIRE(batches == 5);
  REQUIRE(samples == 40);
  REQUIRE(not_ready > 2);
  REQUIRE(frames > batches);
  REQUIRE(sluice_loader_finished(loader) == 1);
  REQUIRE(sluice_loader_try_next(loader, &b) == SLUICE_END);
  REQUIRE(sluice_loader_next_for(loader, 5, &b) == SLUICE_END);

  sluice_stats stats;
  stats.size = sizeof stats;
  REQUIRE(sluice_loader_stats(loader, &stats) == SLUICE_OK);
  REQUIRE(stats.size == sizeof stats);
  REQUIRE(stats.batches_delivered == 5);
  REQUIRE(stats.samples_delivered == 40);
  REQUIRE(stats.bytes_delivered == 40 * (8 + 8));
  REQUIRE(stats.skipped_count == 0);
  REQUIRE(stats.worker_fill_ns >= 5ULL * 150 * 1000 * 1000);
  char* log = nullptr;
  REQUIRE(sluice_loader_skip_log(loader, &log) == SLUICE_OK);
  REQUIRE(std::string(log).empty());
  sluice_free(log);

  // A caller's older, smaller stats struct is written only up to its size.
  alignas(sluice_stats) unsigned char old_stats[offsetof(sluice_stats, batches_retried) + 16];
  std::memset(old_stats, 0xab, sizeof old_stats);
  auto* partial = reinterpret_cast<sluice_stats*>(old_stats);
  partial->size = offsetof(sluice_stats, batches_retried);
  REQUIRE(sluice_loader_stats(loader, partial) == SLUICE_OK);
  REQUIRE(partial->samples_delivered == 40);
  for (size_t i = offsetof(sluice_stats, batches_retried); i < sizeof old_stats; ++i) REQUIRE(old_stats[i] == 0xab);
  sluice_loader_destroy(loader);
}

TEST_CASE("C API: versions and NULL handles", "[c_api]") {
  REQUIRE(sluice_c_api_version() == SLUICE_C_API_VERSION);
  REQUIRE(std::string(sluice_version()).find('.') != std::string::npos);
  sluice_batch* b = nullptr;
  REQUIRE(sluice_loader_try_next(nullptr, &b) == SLUICE_INVALID_ARGUMENT);
  REQUIRE(std::string(sluice_last_error()) == "sluice_loader_try_next: loader must not be NULL");
  REQUIRE(sluice_loader_ready_fd(nullptr) == -1);
  char* json = nullptr;
  REQUIRE(sluice_loader_state_json(nullptr, &json) == SLUICE_INVALID_ARGUMENT);
  sluice_stats stats;
  stats.size = 0;
  REQUIRE(sluice_loader_stats(nullptr, &stats) == SLUICE_INVALID_ARGUMENT);
  sluice_loader_destroy(nullptr);
  sluice_batch_release(nullptr);
  sluice_free(nullptr);
}

TEST_CASE("C API: auto workers through options.max_workers, and what they chose in stats", "[c_api][autotune]") {
  const sluice_field_spec fields[] = {{"id", SLUICE_I64, 0, nullptr}, {"square", SLUICE_F64, 0, nullptr}};
  int ms = 5;  // a producer that waits: more workers deliver more
  sluice_options o = square_options(fields, nullptr);
  o.dataset_size = 8 * 300;
  o.workers = 1;
  o.max_workers = 8;
  o.fill = fill_slowly;
  o.user = &ms;
  sluice_loader* loader = nullptr;
  REQUIRE(sluice_loader_create(&o, &loader) == SLUICE_OK);
  REQUIRE(drain(loader).size() == 300);
  sluice_stats stats;
  stats.size = sizeof stats;
  REQUIRE(sluice_loader_stats(loader, &stats) == SLUICE_OK);
  INFO(stats.autotune);
  CHECK(stats.workers > 1);
  CHECK(std::string(stats.autotune).starts_with("1 -> 2"));
  CHECK(stats.worker_cpu_ns > 0);
  CHECK(stats.worker_cpu_ns < stats.worker_fill_ns);  // asleep most of the fill
  sluice_loader_destroy(loader);

  o.max_workers = 0;  // fixed: the summary is empty
  REQUIRE(sluice_loader_create(&o, &loader) == SLUICE_OK);
  REQUIRE(sluice_loader_stats(loader, &stats) == SLUICE_OK);
  CHECK(stats.workers == 1);
  CHECK(std::string(stats.autotune).empty());
  sluice_loader_destroy(loader);
  REQUIRE(sluice::test::descendants(getpid()).empty());
}

namespace {

// fill_squares that says which sample it makes; *user: the sample that fails
// (kHang: that sample hangs instead).
struct Trouble {
  std::uint64_t sample;
  bool hang;
};

int fill_blaming(void* user, const sluice_fill* b, char* error, size_t error_size) {
  const Trouble& t = *static_cast<const Trouble*>(user);
  auto* ids = static_cast<int64_t*>(b->data[0]);
  auto* squares = static_cast<double*>(b->data[1]);
  for (size_t j = 0; j < b->size; ++j) {
    b->begin_sample(b, j);
    if (b->samples[j] == t.sample) {
      if (t.hang) pause();
      std::snprintf(error, error_size, "sample %llu is poison", static_cast<unsigned long long>(t.sample));
      return 1;
    }
    ids[j] = static_cast<int64_t>(b->samples[j]);
    squares[j] = static_cast<double>(b->samples[j]) * static_cast<double>(b->samples[j]);
  }
  return 0;
}

// fill_blaming over the 50 squares, skipping what fails after one try.
sluice_options skipping_options(const sluice_field_spec* fields, Trouble* t) {
  sluice_options o = square_options(fields, nullptr);
  o.fill = fill_blaming;
  o.user = t;
  o.on_error = SLUICE_ON_ERROR_SKIP;
  o.max_retries = 1;
  return o;
}

// Whether the loader delivers each of the 50 samples once, except `skipped`.
bool all_but(sluice_loader* loader, std::uint64_t skipped) {
  std::vector<uint64_t> ids;
  for (const auto& b : drain(loader)) ids.insert(ids.end(), b.begin(), b.end());
  std::sort(ids.begin(), ids.end());
  std::vector<uint64_t> want;
  for (std::uint64_t i = 0; i < 50; ++i) {
    if (i != skipped) want.push_back(i);
  }
  return ids == want;
}

}  // namespace

TEST_CASE("C API: sluice_options holds every setting of sluice::Options, with its defaults", "[c_api]") {
  sluice_options o;
  sluice_options_init(&o);
  const sluice::Options d;
  CHECK(o.on_error == static_cast<int>(d.on_error));
  CHECK(o.skip_fill == static_cast<int>(d.skip_fill));
  CHECK(o.shard_policy == static_cast<int>(d.shard_policy));
  CHECK(o.max_retries == d.max_retries);
  CHECK(o.batch_timeout_ms == d.batch_timeout_ms);
  CHECK(o.held_timeout_ms == d.held_timeout_ms);
  CHECK(o.worker_memory_mb == d.worker_memory_mb);
  CHECK(o.trace == 0);

  const sluice_field_spec fields[] = {{"id", SLUICE_I64, 0, nullptr}, {"square", SLUICE_F64, 0, nullptr}};
  sluice_loader* loader = nullptr;
  SECTION("on_error = skip drops the sample the fill names, and stats say why") {
    Trouble t{13, false};
    o = skipping_options(fields, &t);
    o.trace = 1;
    REQUIRE(sluice_loader_create(&o, &loader) == SLUICE_OK);
    CHECK(all_but(loader, 13));
    sluice_stats stats;
    stats.size = sizeof stats;
    REQUIRE(sluice_loader_stats(loader, &stats) == SLUICE_OK);
    REQUIRE(stats.skipped_count == 1);
    CHECK(stats.skipped_samples[0] == 13);
    CHECK(std::string(stats.skip_reasons[0]).find("sample 13 is poison") != std::string::npos);
    char* trace = nullptr;
    REQUIRE(sluice_loader_trace_json(loader, &trace) == SLUICE_OK);
    CHECK(std::string(trace).find("traceEvents") != std::string::npos);
    sluice_free(trace);
  }
  SECTION("batch_timeout_ms replaces a worker stuck on a sample, which is then skipped") {
    Trouble t{21, true};
    o = skipping_options(fields, &t);
    o.batch_timeout_ms = 300;
    REQUIRE(sluice_loader_create(&o, &loader) == SLUICE_OK);
    CHECK(all_but(loader, 21));
  }
  SECTION("a value outside an enum is INVALID_ARGUMENT") {
    o = square_options(fields, nullptr);
    o.on_error = 7;
    CHECK(sluice_loader_create(&o, &loader) == SLUICE_INVALID_ARGUMENT);
    CHECK(std::string(sluice_last_error()).find("options.on_error is 7") != std::string::npos);
    loader = nullptr;
  }
  SECTION("a version-3 struct keeps the defaults of the rest") {
    std::uint64_t never = ~0ULL;
    o = square_options(fields, &never);
    o.size = offsetof(sluice_options, memory_budget_mb) + sizeof o.memory_budget_mb;
    o.on_error = 7;  // past the caller's struct: not read
    REQUIRE(sluice_loader_create(&o, &loader) == SLUICE_OK);
    CHECK(drain(loader).size() == 7);
  }
  sluice_loader_destroy(loader);
  REQUIRE(sluice::test::descendants(getpid()).empty());
}
