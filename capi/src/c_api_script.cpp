// The C API's pipeline-script entry points (sluice/sluice.h), built into
// sluice_c where the scripting library is (not in runtime-only builds).
#include <cstddef>
#include <memory>
#include <string>

#include "c_api_internal.h"
#include "sluice/error.h"
#include "sluice/run_settings.h"
#include "sluice/script.h"
#include "sluice/sluice.h"

using sluice::c_api::guarded;
using sluice::c_api::require;

extern "C" {

void sluice_script_options_init(sluice_script_options* options) {
  if (!options) return;
  *options = sluice_script_options{};
  options->size = sizeof(sluice_script_options);
}

sluice_status sluice_loader_open_script_with(const char* path, const sluice_script_options* options,
                                             sluice_loader** out) {
  return guarded([&] {
    require(path, "sluice_loader_open_script", "path");
    require(out, "sluice_loader_open_script", "out");
    *out = nullptr;
    // Version 1 of the struct ends after overrides; a size below that was never set.
    if (options && options->size < offsetof(sluice_script_options, overrides) + sizeof options->overrides) {
      throw sluice::c_api::InvalidArgument(
          "sluice_loader_open_script_with: options->size must be sizeof(sluice_script_options) "
          "(sluice_script_options_init sets it)");
    }
    sluice::RunSettings settings(path);
    if (options && options->overrides) {
      // An unknown name or a bad value is sluice::OptionsError: the caller's.
      for (const char* const* o = options->overrides; *o; ++o) settings.set(*o);
    }
    auto script = std::make_shared<sluice::Script>(settings.load());
    sluice::Options opt = script->options;
    if (options) sluice::c_api::set_resume(opt, sluice::c_api::resume_json_of(*options));
    *out = sluice::c_api::new_loader(std::move(opt), script);
    return SLUICE_OK;
  });
}

sluice_status sluice_loader_open_script(const char* path, const char* const* overrides, sluice_loader** out) {
  sluice_script_options options;
  sluice_script_options_init(&options);
  options.overrides = overrides;
  return sluice_loader_open_script_with(path, &options, out);
}

}  // extern "C"
