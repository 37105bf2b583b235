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

// A record that was read whole but whose content is not what it must be (a
// JSON line that does not parse, lacks its field, or holds bytes that are not
// UTF-8): the record's own fault, which on_error = "skip" may drop for good
// (text tokenized at load leaves it out of the token cache). Any other Error
// (a read that failed, a file that changed) is not the record's, and no skip
// rule makes it permanent.
class SLUICE_API RecordError : public Error {
 public:
  using Error::Error;
};

// An Options value the Loader refuses (a count of 0, a rank past the world
// size, a field the arena cannot hold, a resume state that does not fit the
// run): the caller's to fix, not a failure of the run. The C API returns
// SLUICE_INVALID_ARGUMENT for it, Python raises it as a ValueError too.
class SLUICE_API OptionsError : public Error {
 public:
  using Error::Error;
};

}  // namespace sluice
