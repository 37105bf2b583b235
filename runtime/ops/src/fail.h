// fail.h: the errors of the image ops, all sluice::Error.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "sluice/error.h"

namespace sluice::ops {

// "<name>: <what>", for errors about one file.
[[noreturn]] inline void fail_file(std::string_view name, const std::string& what) {
  std::string message(name.empty() ? std::string_view("(unnamed image)") : name);
  message += ": ";
  message += what;
  throw Error(message);
}

// "sluice ops: <op>: <what>", for misuse of an op.
[[noreturn]] inline void fail_op(const char* op, const std::string& what) {
  throw Error(std::string("sluice ops: ") + op + ": " + what);
}

}  // namespace sluice::ops

namespace sluice::ops {

// Throws unless a width x height image is within `max_pixels`.
inline void check_pixel_limit(std::string_view name, std::uint64_t width, std::uint64_t height,
                              std::uint64_t max_pixels) {
  if (width == 0 || height == 0) {
    fail_file(name, "the header gives an empty image (" + std::to_string(width) + "x" + std::to_string(height) + ")");
  }
  if (width * height > max_pixels) {
    fail_file(name, "the header claims " + std::to_string(width) + "x" + std::to_string(height) + " pixels, over the " +
                        std::to_string(max_pixels) + "-pixel limit (DecodeOptions::max_pixels)");
  }
}

}  // namespace sluice::ops
