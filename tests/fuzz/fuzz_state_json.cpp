// Fuzzes the JSON reader and the loader-state parser: any input either parses
// or throws sluice::Error; nothing else (no crash, no other exception).
#include <cstdint>
#include <string_view>

#include "json.h"
#include "sluice/error.h"
#include "sluice/state.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    sluice::detail::parse_json(text);
  } catch (const sluice::Error&) {
  }
  try {
    sluice::LoaderState s = sluice::LoaderState::from_json(text);
    if (sluice::LoaderState::from_json(s.to_json()) != s) __builtin_trap();  // round trip
  } catch (const sluice::Error&) {
  }
  return 0;
}
