// Device strings and their resolution on this machine.
#include <catch2/catch.hpp>

#include <string>

#include "sluice/cuda/device.h"
#include "sluice/error.h"

using namespace sluice;
using namespace sluice::cuda;

TEST_CASE("parse_device reads cpu, cuda, cuda:N and auto", "[device]") {
  CHECK(parse_device("cpu").spec.kind == DeviceKind::cpu);
  CHECK_FALSE(parse_device("cpu").automatic);
  CHECK(parse_device("cuda").spec.kind == DeviceKind::cuda);
  CHECK(parse_device("cuda").spec.ordinal == 0);
  CHECK(parse_device("cuda:3").spec.ordinal == 3);
  CHECK(parse_device("auto").automatic);
  CHECK(to_string(parse_device("cuda:12").spec) == "cuda:12");
  CHECK(to_string(parse_device("cpu").spec) == "cpu");
  CHECK(parse_device("cuda").by_local_rank);
  CHECK(parse_device("auto").by_local_rank);
  CHECK_FALSE(parse_device("cuda:3").by_local_rank);
}

TEST_CASE("the local rank picks the device, spread over the node's GPUs", "[device]") {
  CHECK(device_for_local_rank(0, 8) == 0);
  CHECK(device_for_local_rank(5, 8) == 5);
  CHECK(device_for_local_rank(9, 8) == 1);  // more ranks than GPUs: they share
  CHECK(device_for_local_rank(3, 0) == 0);
}

TEST_CASE("parse_device rejects anything else, naming it", "[device]") {
  for (const char* bad : {"", "gpu", "cuda:", "cuda:x", "cuda:-1", "cuda:1x", "CUDA", "cuda0", " cuda"}) {
    INFO("device string '" << bad << "'");
    CHECK_THROWS_WITH(parse_device(bad), Catch::Contains("\"" + std::string(bad) + "\"") &&
                                             Catch::Contains("cuda:N"));
  }
}

TEST_CASE("resolve_device: cuda fails clearly and auto falls back without a GPU", "[device]") {
  std::string why;
  const int count = cuda_device_count(&why);
  CHECK(resolve_device("cpu").spec.kind == DeviceKind::cpu);
  if (count == 0) {
    CHECK_FALSE(device_available());
    CHECK_FALSE(why.empty());
    CHECK_THROWS_WITH(resolve_device("cuda"), Catch::StartsWith("device = \"cuda\": no CUDA device (cudaGetDeviceCount"));
    CHECK_THROWS_WITH(resolve_device("cuda:1"), Catch::Contains("no CUDA device"));
    const ResolvedDevice a = resolve_device("auto");
    CHECK(a.spec.kind == DeviceKind::cpu);
    CHECK_THAT(a.note, Catch::Contains("host memory") && Catch::Contains("no CUDA device"));
  } else {
    CHECK(device_available());
    const ResolvedDevice a = resolve_device("auto");
    CHECK(a.spec.kind == DeviceKind::cuda);
    CHECK(a.note.empty());
    CHECK(resolve_device("cuda").spec.ordinal == 0);
    CHECK_THROWS_WITH(resolve_device("cuda:" + std::to_string(count)), Catch::Contains("no such CUDA device"));
  }
}
