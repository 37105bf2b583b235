// .npz archives written by numpy.savez / numpy.savez_compressed: two tiny ones
// committed in tests/io/data (made by NumPy 1.24, Debian 12), more made by
// /usr/bin/python3 at test time (skipped without NumPy), and damaged copies.
#include <catch2/catch.hpp>
#include <cstring>

#include "io_test_support.h"
#include "sluice/error.h"
#include "sluice/io/npy.h"

using namespace sluice::io;
using Catch::Matchers::Contains;

namespace {

const std::string kData = SLUICE_IO_TEST_DATA;

template <typename T>
std::vector<T> values(const NpyArray& a) {
  std::vector<T> v(a.data().size() / sizeof(T));
  std::memcpy(v.data(), a.data().data(), a.data().size());
  return v;
}

// small.npz and small_compressed.npz: x = arange(12, float32).reshape(4, 3),
// y = int64 [1, 2, 3, 4].
void check_small(const std::string& path) {
  INFO(path);
  NpzArchive npz(path);
  REQUIRE(npz.members().size() == 2);
  CHECK(npz.members()[0].name == "x.npy");
  CHECK(npz.member_list() == "members: x, y");
  NpyArray x = npz.array("x");
  CHECK(x.path() == path);
  CHECK(x.member() == "x.npy");
  CHECK(x.dtype() == sluice::DType::f32);
  CHECK(x.shape() == std::vector<std::int64_t>{4, 3});
  CHECK(values<float>(x) == std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  NpyArray y(path, "y.npy");
  CHECK(values<std::int64_t>(y) == std::vector<std::int64_t>{1, 2, 3, 4});
}

}  // namespace

TEST_CASE("npz: stored and deflated members as numpy.savez and savez_compressed write them", "[npz]") {
  check_small(kData + "/small.npz");
  check_small(kData + "/small_compressed.npz");
  NpzArchive stored(kData + "/small.npz");
  CHECK_FALSE(stored.members()[0].deflated);
  CHECK(NpzArchive(kData + "/small_compressed.npz").members()[1].deflated);
  // A stored member is a view into the archive's mapping: its data lies
  // inside the archive's bytes, at the member's offset.
  const auto file = test::read_file(kData + "/small.npz");
  NpyArray y = stored.array("y");
  CHECK(std::memcmp(y.data().data() - y.header_bytes(),
                    file.data() + stored.members()[1].header_offset + 30 + 5 + 20, y.header_bytes()) == 0);
}

TEST_CASE("npz: archives made by NumPy at test time: dtypes, a large deflated member, zip64 directory", "[npz]") {
  test::TempDir tmp;
  if (!test::run_numpy(R"(
import numpy as np, zipfile
big = (np.arange(600000, dtype=np.int64) * 7919) % 1000003
kw = dict(big=big, u8=np.arange(256, dtype=np.uint8).reshape(16, 16),
          f64=np.linspace(0, 1, 10), b=np.array([True, False, True]),
          fort=np.asfortranarray(np.arange(6, dtype=np.int32).reshape(2, 3)))
np.savez("plain.npz", **kw)
np.savez_compressed("packed.npz", **kw)
zipfile.ZIP64_LIMIT = 0  # every directory entry and the end record in zip64 form
np.savez("zip64.npz", **kw)
)",
                       tmp.path()))
    return;
  for (const char* name : {"plain.npz", "packed.npz", "zip64.npz"}) {
    INFO(name);
    NpzArchive npz(tmp.file(name));
    CHECK(npz.members().size() == 5);
    const auto big = values<std::int64_t>(npz.array("big"));
    REQUIRE(big.size() == 600000);
    for (std::size_t i = 0; i < big.size(); i += 9973) CHECK(big[i] == static_cast<std::int64_t>(i * 7919 % 1000003));
    CHECK(values<std::uint8_t>(npz.array("u8"))[255] == 255);
    CHECK(values<double>(npz.array("f64"))[9] == 1.0);
    CHECK(npz.array("b").dtype() == sluice::DType::boolean);
    NpyArray fort = npz.array("fort");
    CHECK(fort.fortran_order());
    std::vector<std::byte> row(fort.row_bytes());
    fort.copy_row(1, row);
    std::int32_t r[3];
    std::memcpy(r, row.data(), sizeof r);
    CHECK((r[0] == 3 && r[1] == 4 && r[2] == 5));
  }
}

TEST_CASE("npz: damaged archives are refused naming the file and the member", "[npz]") {
  test::TempDir tmp;
  const auto stored = test::read_file(kData + "/small.npz");
  const auto packed = test::read_file(kData + "/small_compressed.npz");
  const NpzArchive plain(kData + "/small.npz");
  const NpzMember y = plain.members()[1];

  // A flipped byte in y's data (past its .npy header): the CRC-32 check.
  auto flipped = stored;
  flipped[y.header_offset + 30 + 5 + 20 + y.size - 3] ^= std::byte{0x40};
  test::write_file(tmp.file("flipped.npz"), flipped);
  CHECK_THROWS_WITH(NpzArchive(tmp.file("flipped.npz")).array("y"),
                    Contains(tmp.file("flipped.npz")) && Contains("member 'y.npy'") && Contains("CRC-32 mismatch"));
  CHECK_NOTHROW(NpzArchive(tmp.file("flipped.npz")).array("x"));

  // A flipped byte in a deflated member: zlib's error or the CRC, either naming the member.
  const NpzMember px = NpzArchive(kData + "/small_compressed.npz").members()[0];
  for (std::uint64_t at = 0; at < px.compressed; at += 7) {
    auto bad = packed;
    bad[px.header_offset + 30 + 5 + 20 + at] ^= std::byte{0x10};
    test::write_file(tmp.file("packed.npz"), bad);
    INFO("flipped compressed byte " << at);
    CHECK_THROWS_WITH(NpzArchive(tmp.file("packed.npz")).array("x"),
                      Contains("member 'x.npy'") &&
                          (Contains("CRC-32 mismatch") || Contains("zlib") || Contains("deflate")));
  }

  // Truncated: the end record is gone, or the member's data is cut.
  auto cut = stored;
  cut.resize(stored.size() / 2);
  test::write_file(tmp.file("cut.npz"), cut);
  CHECK_THROWS_WITH(NpzArchive(tmp.file("cut.npz")), Contains(tmp.file("cut.npz")) && Contains("truncated"));

  // Not a zip at all, named .npz; and a .npy reader given an archive.
  test::write_file(tmp.file("text.npz"), test::bytes_of("this is not an archive, only some text\n"));
  CHECK_THROWS_WITH(NpzArchive(tmp.file("text.npz")), Contains(tmp.file("text.npz")) && Contains("not a zip archive"));
  CHECK_THROWS_WITH(NpyArray(kData + "/small.npz"), Contains("a .npz archive") && Contains("members: x, y"));
  CHECK_THROWS_WITH(plain.array("z"), Contains("no member 'z'") && Contains("members: x, y"));
}
