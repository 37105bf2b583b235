// sluice/error.h: the one error convention of the C++ API.
//
// Every C++ entry point reports failure by throwing sluice::Error, whose message
// names what failed and where (file, record, sample, worker, option). The C API
// (sluice/sluice.h) catches it at the boundary and returns a status code instead.
#pragma once

#include "sluice/export.h"

#include <stdexcept>
#include <string>

namespace sluice {

class SLUICE_API Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

}  // namespace sluice
