// Helpers for the io tests: where ../shared/data is, a temporary folder, and
// small file utilities. Tests that need the shared data call shared_data()
// and return early (with a Catch2 WARN) when it is absent.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace sluice::io::test {

// The shared data folder, or nullopt (after a WARN naming it) when absent.
std::optional<std::filesystem::path> shared_data();

// A fresh folder removed (with its content) on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::filesystem::path& path() const { return path_; }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

// Runs the Python `script` with /usr/bin/python3 and NumPy, in `dir`. False
// (after a WARN saying what is missing) when either is unavailable; a script
// that fails is a test failure.
bool run_numpy(const std::string& script, const std::filesystem::path& dir);

std::vector<std::byte> read_file(const std::string& path);
void write_file(const std::string& path, const std::vector<std::byte>& bytes);
std::vector<std::byte> bytes_of(const std::string& text);
std::string text_of(std::span<const std::byte> bytes);

}  // namespace sluice::io::test

// Skips the current test case when ../shared/data is absent.
#define SLUICE_REQUIRE_SHARED_DATA(var)                     \
  auto var##_opt = ::sluice::io::test::shared_data();       \
  if (!var##_opt) return;                                   \
  const std::filesystem::path& var = *var##_opt
