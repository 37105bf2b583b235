// setting_rows.h: the table of sluice/settings.h with what reads and applies
// each setting, for RunSettings (run_settings.cpp).
//
// A setting's value, once parsed, is one integer: a count as it is, a flag as
// 0 or 1, a choice as its index in `choices`, "auto" as `auto_value`; a path
// is 0, its text going to load_path.
//
// Thread safety: the rows are built once and never change.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/options.h"
#include "sluice/script.h"
#include "sluice/settings.h"

namespace sluice::detail {

struct SettingRow {
  Setting about;
  std::uint64_t min = 0, max = 0;            // counts
  std::optional<std::uint64_t> auto_value;   // counts that also take "auto"
  std::vector<std::string> choices;          // choices
  std::string expects;                       // a choice's error text, when not "a or b"
  // Settings that shape the load (ScriptOptions): set there as they are given.
  void (*load)(ScriptOptions&, std::uint64_t) = nullptr;
  void (*load_path)(ScriptOptions&, std::string_view) = nullptr;  // paths, which shape the load only
  // Onto Options: after the load, or for options that come from no script
  // (RunSettings::apply_all) also the load's. Null: applied specially
  // (global_batch_size) or nowhere (device).
  void (*apply)(Options&, std::uint64_t) = nullptr;
  // The value Options hold, for RunSettings::values; null where they hold none.
  std::uint64_t (*get)(const Options&) = nullptr;
};

const std::vector<SettingRow>& setting_rows();

// The row's index in setting_rows(), or npos.
inline constexpr std::size_t npos = static_cast<std::size_t>(-1);
std::size_t setting_index(std::string_view name);

// "--batch-timeout-ms" as "batch_timeout_ms".
std::string normal_name(std::string_view name);

// Text as the row's value; throws Error "<shown> expects ..., got '<text>'".
std::uint64_t parse_setting(const SettingRow& row, const std::string& shown, std::string_view text);

// A value as text that parse_setting reads back.
std::string setting_text(const SettingRow& row, std::uint64_t value);

}  // namespace sluice::detail
