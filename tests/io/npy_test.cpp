#include <catch2/catch.hpp>
#include <cstring>

#include "io_test_support.h"
#include "sluice/error.h"
#include "sluice/io/npy.h"

using namespace sluice::io;
using Catch::Matchers::Contains;

namespace {

// Values from the xtensor fixtures, in C order (checked against NumPy's reading).
const double kDouble[27] = {
    0.29731722517856973, 0.04380156762013887, 0.9474830830460288,  0.8502064289459269,
    0.5295861769706526,  0.059817202145132975, 0.7725325916361806, 0.4756423082040796,
    0.7027400461247965,  0.8599844697935561,  0.6116015763167233,  0.4443293883621484,
    0.255067649901883,   0.9742097648401262,  0.1545584203463619,  0.05873659214817728,
    0.661917637891905,   0.014488379360392156, 0.1759189951562422, 0.13850364598742082,
    0.9405942634163791,  0.7994180851587701,  0.5124431994624011,  0.5136479575134278,
    0.25721979162081987, 0.4160885847722037,  0.06255319041636886};
const bool kBool[27] = {0, 0, 1, 1, 1, 0, 1, 0, 1, 1, 1, 0, 0, 1, 0, 0, 1, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0};

std::vector<double> row_doubles(const NpyArray& a, std::uint64_t i) {
  std::vector<std::byte> out(a.row_bytes());
  a.copy_row(i, out);
  std::vector<double> v(out.size() / 8);
  std::memcpy(v.data(), out.data(), out.size());
  return v;
}

}  // namespace

TEST_CASE("npy: C and Fortran order, old and new header alignment, give the same rows", "[npy]") {
  SLUICE_REQUIRE_SHARED_DATA(data);
  const auto dir = data / "npy/xtensor";
  for (const char* name : {"double.le.npy", "double_fortran.le.npy", "old16align_double.npy",
                           "old16align_double_fortran.npy"}) {
    INFO(name);
    NpyArray a((dir / name).string());
    CHECK(a.dtype() == sluice::DType::f64);
    CHECK(a.shape() == std::vector<std::int64_t>{3, 3, 3});
    CHECK(a.rows() == 3);
    CHECK(a.row_bytes() == 72);
    CHECK(a.header_bytes() == (std::string(name).rfind("old16", 0) == 0 ? 80u : 128u));
    CHECK(a.fortran_order() == (std::string(name).find("fortran") != std::string::npos));
    for (std::uint64_t i = 0; i < 3; ++i) {
      auto row = row_doubles(a, i);
      for (std::size_t k = 0; k < 9; ++k) CHECK(row[k] == kDouble[i * 9 + k]);
    }
  }
  for (const char* name : {"bool.le.npy", "bool_fortran.le.npy", "old16align_bool.npy",
                           "old16align_bool_fortran.npy"}) {
    INFO(name);
    NpyArray a((dir / name).string());
    CHECK(a.dtype() == sluice::DType::boolean);
    for (std::uint64_t i = 0; i < 3; ++i) {
      std::vector<std::byte> out(a.row_bytes());
      a.copy_row(i, out);
      for (std::size_t k = 0; k < 9; ++k) CHECK((out[k] != std::byte{0}) == kBool[i * 9 + k]);
    }
  }
}

TEST_CASE("npy: 1-d arrays: a row is one element, in place", "[npy]") {
  SLUICE_REQUIRE_SHARED_DATA(data);
  const auto dir = data / "npy/xtensor";
  NpyArray ints((dir / "int.le.npy").string());
  CHECK(ints.dtype() == sluice::DType::i32);
  REQUIRE(ints.rows() == 5);
  for (std::uint64_t i = 0; i < 5; ++i) {
    std::int32_t v;
    std::memcpy(&v, ints.row(i).data(), 4);
    CHECK(v == static_cast<std::int32_t>(3 + i));
  }
  for (const char* name : {"unsignedlong.le.npy", "old16align_unsignedlong.npy"}) {
    NpyArray a((dir / name).string());
    CHECK(a.dtype() == sluice::DType::u64);
    std::uint64_t last;
    std::memcpy(&last, a.row(4).data(), 8);
    CHECK(last == 1234321u);
  }
  CHECK_THROWS_WITH(ints.row(5), Contains("out of range"));
}

TEST_CASE("npy: bad files are refused with the file and the reason", "[npy]") {
  SLUICE_REQUIRE_SHARED_DATA(data);
  test::TempDir tmp;
  auto good = test::read_file((data / "npy/xtensor/double.le.npy").string());
  auto write_header = [&](const std::string& name, const std::string& dict, std::size_t data_bytes) {
    std::string h = dict;
    while ((10 + h.size() + 1) % 64) h += ' ';
    h += '\n';
    std::string file = std::string("\x93NUMPY\x01\x00", 8);
    file += static_cast<char>(h.size() & 0xff);
    file += static_cast<char>(h.size() >> 8);
    file += h;
    file += std::string(data_bytes, '\0');
    test::write_file(tmp.file(name), test::bytes_of(file));
    return tmp.file(name);
  };
  auto object = write_header("o.npy", "{'descr': '|O', 'fortran_order': False, 'shape': (2,), }", 16);
  CHECK_THROWS_WITH(NpyArray(object), Contains(object) && Contains("object arrays"));
  auto big_endian = write_header("b.npy", "{'descr': '>f8', 'fortran_order': False, 'shape': (2,), }", 16);
  CHECK_THROWS_WITH(NpyArray(big_endian), Contains("big-endian"));
  auto short_data = write_header("s.npy", "{'descr': '<f8', 'fortran_order': False, 'shape': (4,), }", 16);
  CHECK_THROWS_WITH(NpyArray(short_data), Contains("truncated") && Contains("byte offset 128"));

  auto bad_magic = good;
  bad_magic[1] = std::byte{'X'};
  test::write_file(tmp.file("m.npy"), bad_magic);
  CHECK_THROWS_WITH(NpyArray(tmp.file("m.npy")), Contains("byte offset 0") && Contains("magic"));

  auto cut = good;
  cut.resize(60);  // inside the header
  test::write_file(tmp.file("c.npy"), cut);
  CHECK_THROWS_WITH(NpyArray(tmp.file("c.npy")), Contains("bad .npy header"));
  CHECK_THROWS_WITH(NpyArray(tmp.file("none.npy")), Contains("cannot open"));
}

TEST_CASE("npy: a 4-d Fortran array written by the test gathers rows in C order", "[npy]") {
  test::TempDir tmp;
  const std::int64_t d0 = 3, d1 = 2, d2 = 4, d3 = 5;
  std::string h = "{'descr': '<i4', 'fortran_order': True, 'shape': (3, 2, 4, 5), }";
  while ((10 + h.size() + 1) % 64) h += ' ';
  h += '\n';
  std::string file = std::string("\x93NUMPY\x01\x00", 8);
  file += static_cast<char>(h.size());
  file += '\0';
  file += h;
  std::vector<std::int32_t> values(d0 * d1 * d2 * d3);
  // value(i,j,k,l) = 1000i + 100j + 10k + l, stored at Fortran position.
  for (std::int64_t i = 0; i < d0; ++i)
    for (std::int64_t j = 0; j < d1; ++j)
      for (std::int64_t k = 0; k < d2; ++k)
        for (std::int64_t l = 0; l < d3; ++l)
          values[i + d0 * (j + d1 * (k + d2 * l))] = static_cast<std::int32_t>(1000 * i + 100 * j + 10 * k + l);
  file.append(reinterpret_cast<const char*>(values.data()), values.size() * 4);
  test::write_file(tmp.file("f.npy"), test::bytes_of(file));
  NpyArray a(tmp.file("f.npy"));
  CHECK_FALSE(a.rows_contiguous());
  CHECK(a.row_shape() == std::vector<std::int64_t>{2, 4, 5});
  std::vector<std::byte> out(a.row_bytes());
  a.copy_row(2, out);
  std::vector<std::int32_t> row(out.size() / 4);
  std::memcpy(row.data(), out.data(), out.size());
  std::size_t e = 0;
  for (std::int64_t j = 0; j < d1; ++j)
    for (std::int64_t k = 0; k < d2; ++k)
      for (std::int64_t l = 0; l < d3; ++l) CHECK(row[e++] == 2000 + 100 * j + 10 * k + l);
  CHECK_THROWS_WITH(a.row(0), Contains("copy_row"));
}
