#include "io_test_support.h"

#include <unistd.h>

#include <catch2/catch.hpp>

#include "skip.h"
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <span>

namespace sluice::io::test {

std::optional<std::filesystem::path> shared_data() {
  std::filesystem::path p = SLUICE_SHARED_DATA;
  std::error_code ec;
  if (std::filesystem::is_directory(p, ec)) return p;
  sluice::test::exit_if_skip_code("shared test data not found at " + p.string());
  WARN("skipped: shared test data not found at " << p.string()
                                                 << " (expected ../shared/data beside the repository)");
  return std::nullopt;
}

bool run_numpy(const std::string& script, const std::filesystem::path& dir) {
  if (std::system("/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1") != 0) {
    sluice::test::exit_if_skip_code("/usr/bin/python3 with NumPy is unavailable (Debian: python3-numpy)");
    WARN("skipped: /usr/bin/python3 with NumPy is unavailable (Debian: python3-numpy)");
    return false;
  }
  const std::string file = (dir / "make.py").string();
  {
    std::ofstream out(file);
    out << script;
  }
  const std::string cmd = "cd '" + dir.string() + "' && /usr/bin/python3 make.py";
  INFO(script);
  REQUIRE(std::system(cmd.c_str()) == 0);
  return true;
}

TempDir::TempDir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "sluice-io-XXXXXX").string();
  if (!::mkdtemp(tmpl.data())) FAIL("mkdtemp failed");
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::vector<std::byte> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in);
  std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> out(chars.size());
  std::memcpy(out.data(), chars.data(), chars.size());
  return out;
}

void write_file(const std::string& path, const std::vector<std::byte>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  REQUIRE(out);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(out);
}

std::vector<std::byte> bytes_of(const std::string& text) {
  std::vector<std::byte> out(text.size());
  std::memcpy(out.data(), text.data(), text.size());
  return out;
}

std::string text_of(std::span<const std::byte> bytes) {
  return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

}  // namespace sluice::io::test
