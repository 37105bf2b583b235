// copy_to_batch: exact bytes at every size and alignment, in process and
// through real workers filling real slots.
#include <catch2/catch.hpp>

#include <cstring>
#include <vector>

#include "sluice/batch_copy.h"
#include "sluice/loader.h"
#include "sluice/producer.h"

using namespace sluice;

namespace {

unsigned char pattern(std::size_t i, std::uint64_t seed) {
  return static_cast<unsigned char>((i * 131 + seed * 7 + (i >> 9)) & 0xff);
}

}  // namespace

TEST_CASE("copy_to_batch copies every size and alignment and nothing else", "[copy]") {
  std::vector<unsigned char> src(300000);
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = pattern(i, 1);
  for (std::size_t n : {0, 1, 15, 16, 63, 64, 4095, 4096, 4097, 4160, 65549, 262144}) {
    for (std::size_t dst_off : {0, 1, 8, 15}) {
      for (std::size_t src_off : {0, 3}) {
        std::vector<unsigned char> dst(n + 64, 0xee);
        copy_to_batch(dst.data() + dst_off, src.data() + src_off, n);
        INFO("n " << n << " dst offset " << dst_off << " src offset " << src_off);
        CHECK(std::memcmp(dst.data() + dst_off, src.data() + src_off, n) == 0);
        for (std::size_t i = 0; i < dst_off; ++i) CHECK(dst[i] == 0xee);
        for (std::size_t i = dst_off + n; i < dst.size(); ++i) REQUIRE(dst[i] == 0xee);
      }
    }
  }
}

TEST_CASE("copy_to_batch: batches filled by streaming stores in workers arrive whole", "[copy][loader]") {
  constexpr std::size_t kBytes = 64 * 1024 + 5;
  Options o;
  o.dataset_size = 96;
  o.batch_size = 4;
  o.workers = 2;
  o.fields = {{"data", DType::u8, {static_cast<std::int64_t>(kBytes)}}};
  o.producer = per_sample([](const SampleRef& s) {
    std::vector<unsigned char> src(kBytes);
    for (std::size_t i = 0; i < kBytes; ++i) src[i] = pattern(i, s.index);
    copy_to_batch(s.data(0), src.data(), kBytes);
  });
  Loader loader(o);
  std::size_t samples = 0;
  while (auto batch = loader.next()) {
    const auto data = batch->field(0).as<const unsigned char>();
    for (std::size_t j = 0; j < batch->size(); ++j) {
      const std::uint64_t id = batch->sample_ids()[j];
      bool same = true;
      for (std::size_t i = 0; i < kBytes && same; ++i) same = data[j * kBytes + i] == pattern(i, id);
      CHECK(same);
      ++samples;
    }
  }
  CHECK(samples == 96);
}
