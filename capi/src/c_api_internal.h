// The C API's handles and its error handling, shared by c_api.cpp (loaders
// from a C fill function, batches, state, stats) and c_api_script.cpp (the
// script entry points, built where scripting is). Private to capi/.
#pragma once

#include <cstddef>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "sluice/error.h"
#include "sluice/loader.h"
#include "sluice/sluice.h"

struct sluice_loader {
  sluice::Loader loader;
  std::shared_ptr<const void> keep;  // what the loader was built from and must outlive it (a Script)
  // What the last sluice_loader_stats handed out.
  sluice::Stats stats;
  std::vector<const char*> skip_reasons;
};

struct sluice_batch {
  sluice::Batch batch;
};

namespace sluice::c_api {

// Thrown inside guarded() for a bad argument: SLUICE_INVALID_ARGUMENT.
class InvalidArgument : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

void clear_last_error() noexcept;
void set_last_error(const char* message) noexcept;

// Runs fn, turning whatever it throws into a status and the calling thread's
// message; nothing escapes. A bad argument (InvalidArgument) and an option
// the runtime refuses (sluice::OptionsError: a setting's value, a count of 0,
// a resume state that does not fit) are SLUICE_INVALID_ARGUMENT.
template <typename Fn>
sluice_status guarded(Fn&& fn) noexcept {
  try {
    clear_last_error();
    return fn();
  } catch (const InvalidArgument& e) {
    set_last_error(e.what());
    return SLUICE_INVALID_ARGUMENT;
  } catch (const OptionsError& e) {
    set_last_error(e.what());
    return SLUICE_INVALID_ARGUMENT;
  } catch (const std::bad_alloc&) {
    set_last_error("out of memory");
  } catch (const std::exception& e) {
    set_last_error(e.what());
  } catch (...) {
    set_last_error("unknown error");
  }
  return SLUICE_ERROR;
}

// Throws InvalidArgument("<function>: <what> must not be NULL") if p is NULL.
inline void require(const void* p, const char* function, const char* what) {
  if (!p) throw InvalidArgument(std::string(function) + ": " + what + " must not be NULL");
}

// The resume_json of a versioned options struct, if the caller's struct has it and it is set.
template <typename Struct>
const char* resume_json_of(const Struct& s) {
  const bool has = s.size >= offsetof(Struct, resume_json) + sizeof s.resume_json;
  return has ? s.resume_json : nullptr;
}

// options.resume from a state's JSON (NULL: none).
void set_resume(Options& options, const char* resume_json);

// A new loader handle over options, keeping `keep` alive as long as it.
sluice_loader* new_loader(Options options, std::shared_ptr<const void> keep = nullptr);

}  // namespace sluice::c_api
