// skip.h: how a test case that cannot run here says so.
//
// SKIP_TEST("reason") ends the running test case as skipped. Under CTest,
// which runs each test case in a process of its own with
// SLUICE_SKIP_RETURN_CODE set (tests/CMakeLists.txt), the process exits with
// that code and CTest reports the test as skipped, never as passed. Run by
// hand, the test case prints a warning and returns.
#pragma once

#include <catch2/catch.hpp>

#include <sstream>
#include <string>

namespace sluice::test {

// Exits the process with SLUICE_SKIP_RETURN_CODE if it is set; else returns.
void exit_if_skip_code(const std::string& why);

}  // namespace sluice::test

#define SKIP_TEST(why)                                  \
  do {                                                  \
    std::ostringstream skip_reason_;                    \
    skip_reason_ << why;                                \
    ::sluice::test::exit_if_skip_code(skip_reason_.str()); \
    WARN("skipped: " << skip_reason_.str());            \
    return;                                             \
  } while (0)
