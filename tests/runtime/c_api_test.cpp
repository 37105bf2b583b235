#include <catch2/catch.hpp>

#include <cstdio>
#include <cstring>
#include <string>
#include <unistd.h>

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

  o.dataset_size = 0;
  REQUIRE(sluice_loader_create(&o, &loader) == SLUICE_ERROR);
  REQUIRE(std::string(sluice_last_error()).find("dataset_size") != std::string::npos);
  o.fill = nullptr;
  REQUIRE(sluice_loader_create(&o, &loader) == SLUICE_INVALID_ARGUMENT);
}
