// support.h: temporary pipeline scripts, the sluice command line as a child
// process, and the processes a test leaves behind.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "sluice/loader.h"

namespace sluice::test {

// A fresh directory under $TMPDIR, removed with everything in it on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  // Writes `content` to path()/name and returns that path.
  std::string write(const std::string& name, const std::string& content) const;

 private:
  std::string path_;
};

// Every live or zombie descendant of this process, from /proc.
std::vector<pid_t> descendants();

// Polls until this process has no descendant (reaping adopted zombies), at most
// timeout_ms. Returns the ones left.
std::vector<pid_t> wait_for_no_descendants(int timeout_ms);

struct CliResult {
  int status = -1;  // exit status, or 128 + signal
  std::string out;
  std::string err;
};

// Runs the `sluice` executable with args in a child process and waits for it.
// The test process is made a child subreaper first, so any worker the command
// leaves behind is adopted by the test and shows in descendants().
CliResult run_cli(const std::vector<std::string>& args);

// The lines of a text file (none if it cannot be read).
std::vector<std::string> read_lines(const std::string& path);

// Sample ids of each batch line of a run record (header and skip lines left out).
std::vector<std::vector<std::uint64_t>> record_samples(const std::string& path);

// ../shared/data (the real-data fixtures) as an absolute path, or "" after a
// WARN that ctest turns into a skip (SKIP_REGULAR_EXPRESSION) when it is absent.
std::string shared_data();

// An image folder of real photos for sluice.folders: for each class, its
// files copied from ../shared/data/images/pillow-tests to DIR/train/CLASS/
// (a file given as "nested/hopper.jpg" is hopper.jpg copied into a
// sub-folder). Returns DIR/train, or "" (after shared_data()'s skip) when the
// fixtures are absent.
using ImageClasses = std::vector<std::pair<std::string, std::vector<std::string>>>;
std::string pillow_folder(const TempDir& dir, const ImageClasses& classes);

// One delivered batch, copied out for comparison.
struct BatchCopy {
  std::uint64_t epoch = 0;
  std::uint64_t index = 0;
  std::vector<std::uint64_t> samples;
  std::vector<std::vector<unsigned char>> fields;  // each field's bytes
  auto operator<=>(const BatchCopy&) const = default;
};

BatchCopy copy_batch(const Batch& batch);

// Every batch a Loader delivers, in delivery order.
std::vector<BatchCopy> drain(Loader& loader);

}  // namespace sluice::test
