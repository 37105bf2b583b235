#include <catch2/catch.hpp>
#include <cstring>
#include <span>
#include <vector>

#include "io_test_support.h"
#include "sluice/error.h"
#include "sluice/half.h"
#include "sluice/io/example.h"
#include "sluice/io/tfrecord.h"

using namespace sluice::io;
using Catch::Matchers::Contains;

namespace {

// The records of pytorch-data's tfrecord `name`, read through a TFRecordSource
// (its index in a temporary folder).
std::vector<std::vector<std::byte>> pytorch_records(const std::filesystem::path& data, const char* name) {
  test::TempDir tmp;
  TFRecordOptions options;
  options.index_dir = tmp.path().string();
  TFRecordSource source({(data / "tfrecord/pytorch-data" / name).string()}, options);
  std::vector<std::vector<std::byte>> records;
  std::vector<std::byte> buf;
  Sample s;
  for (std::uint64_t i = 0; i < source.size(); ++i) {
    read_sample(source, i, buf, s);
    records.emplace_back(s.fields[0].bytes.begin(), s.fields[0].bytes.end());
  }
  return records;
}

}  // namespace

TEST_CASE("example: pytorch-data's records decode by feature name", "[example]") {
  SLUICE_REQUIRE_SHARED_DATA(data);
  const auto records = pytorch_records(data, "example.tfrecord");
  REQUIRE(records.size() == 4);
  Example ex;
  for (std::uint64_t i = 0; i < 4; ++i) {
    INFO("record " << i);
    ex.parse(records[i]);
    auto features = ex.features();
    REQUIRE(features.size() == 3);
    CHECK(features[0].name == "x_byte");
    CHECK(features[0].kind == FeatureKind::bytes_list);
    CHECK(features[1].name == "x_float");
    CHECK(features[1].kind == FeatureKind::float_list);
    CHECK(features[2].name == "x_int");
    CHECK(features[2].kind == FeatureKind::int64_list);

    auto x = ex.floats("x_float");
    auto xi = ex.int64s("x_int");
    REQUIRE(x.size() == xi.size());
    REQUIRE(!x.empty());
    CHECK(x[0] == Approx(10.0 * static_cast<double>(i)));
    for (std::size_t k = 0; k < x.size(); ++k) CHECK(xi[k] == static_cast<std::int64_t>(x[k] * 10));
    auto b = ex.bytes("x_byte");
    REQUIRE(b.size() == 1);
    CHECK(b[0] == "test str");

    // Typed copy into a batch-field buffer.
    std::vector<std::byte> out(xi.size() * 4);
    ex.copy_to("x_int", sluice::DType::i32, out);
    std::int32_t first;
    std::memcpy(&first, out.data(), 4);
    CHECK(first == xi[0]);
    std::vector<std::byte> wrong(3);
    CHECK_THROWS_WITH(ex.copy_to("x_int", sluice::DType::i32, wrong), Contains("x_int"));
    // Into float16 and bfloat16 fields: their bits, rounded as sluice/half.h rounds.
    for (const sluice::DType half : {sluice::DType::f16, sluice::DType::bf16}) {
      std::vector<std::byte> bits(x.size() * 2);
      ex.copy_to("x_float", half, bits);
      for (std::size_t k = 0; k < x.size(); ++k) {
        std::uint16_t b;
        std::memcpy(&b, bits.data() + k * 2, 2);
        CHECK(b == (half == sluice::DType::f16 ? sluice::float_to_half(x[k]) : sluice::float_to_bfloat16(x[k])));
      }
    }
  }
  CHECK_THROWS_WITH(ex.floats("nope"), Contains("no feature 'nope'"));
  CHECK_THROWS_WITH(ex.floats("x_int"), Contains("int64_list"));
  CHECK(ex.kind("nope") == FeatureKind::none);
}

TEST_CASE("example: a malformed Example is an error", "[example]") {
  SLUICE_REQUIRE_SHARED_DATA(data);
  const auto record = pytorch_records(data, "example.tfrecord").at(0);
  const std::span<const std::byte> payload(record);
  Example ex;
  CHECK_THROWS_WITH(ex.parse(payload.first(payload.size() - 7)), Contains("malformed tf.train.Example"));
  std::vector<std::byte> garbage(40, std::byte{0xff});
  CHECK_THROWS_WITH(ex.parse(garbage), Contains("malformed"));
}

TEST_CASE("example: pytorch-data's SequenceExamples: context and feature_lists", "[example]") {
  SLUICE_REQUIRE_SHARED_DATA(data);
  const auto records = pytorch_records(data, "sequence_example.tfrecord");
  REQUIRE(records.size() == 4);
  Example ex;
  // Record i: context x_float = 10i .. 10i+9, x_int = 10 x_float, x_byte =
  // "test str"; feature_lists x_*_seq: every step repeats the context's list.
  for (std::uint64_t i = 0; i < 4; ++i) {
    INFO("record " << i);
    CHECK_THROWS_WITH(ex.parse(records[i]),
                      Contains("a tf.train.SequenceExample, not a tf.train.Example") &&
                          Contains("x_byte_seq, x_float_seq, x_int_seq") && Contains("sluice.sequence_example"));
    ex.parse_sequence(records[i]);
    CHECK(ex.is_sequence());
    REQUIRE(ex.features().size() == 3);
    const auto x = ex.floats("x_float");
    REQUIRE(x.size() == 10);
    for (std::size_t k = 0; k < 10; ++k) CHECK(x[k] == static_cast<float>(10 * i + k));
    const auto lists = ex.feature_lists();
    REQUIRE(lists.size() == 3);
    CHECK(lists[0].name == "x_byte_seq");
    CHECK(lists[0].kind == FeatureKind::bytes_list);
    CHECK(lists[1].kind == FeatureKind::float_list);
    CHECK(lists[2].kind == FeatureKind::int64_list);
    const std::size_t steps = ex.steps("x_float_seq");
    CHECK(steps == 2 * i + 3);  // 3, 5, 7, 9 (protoc --decode_raw agrees)
    CHECK(ex.steps("x_int_seq") == steps);
    CHECK(ex.steps("x_byte_seq") == steps);
    for (std::size_t t = 0; t < steps; ++t) {
      const auto xs = ex.floats("x_float_seq", t);
      CHECK(std::vector<float>(xs.begin(), xs.end()) == std::vector<float>(x.begin(), x.end()));
      const auto is = ex.int64s("x_int_seq", t);
      REQUIRE(is.size() == 10);
      CHECK(is[9] == static_cast<std::int64_t>(10 * (10 * i + 9)));
      CHECK(ex.bytes_at("x_byte_seq", 0, t) == "test str");
      std::vector<std::byte> out(10 * 8);
      ex.copy_to("x_float_seq", sluice::DType::f64, out, t);
    }
    CHECK_THROWS_WITH(ex.floats("x_float_seq", steps), Contains("has " + std::to_string(steps) + " steps"));
    CHECK_THROWS_WITH(ex.floats("nope", 0), Contains("no feature_list 'nope'"));
    CHECK_THROWS_WITH(ex.int64s("x_float_seq", 0), Contains("feature_list 'x_float_seq' step 0 is a float_list"));
  }
  // Plain Examples still parse, and are no sequences.
  ex.parse(pytorch_records(data, "example.tfrecord")[0]);
  CHECK_FALSE(ex.is_sequence());
  CHECK(ex.feature_lists().empty());
  CHECK(ex.steps("x_float") == 0);
}
