#include "sluice/run_settings.h"

#include <string>
#include <vector>

#include "setting_rows.h"
#include "sluice/error.h"
#include "sluice/launcher.h"
#include "sluice/script.h"
#include "sluice/settings.h"

namespace sluice {

using detail::setting_rows;

bool RunSettings::known(std::string_view name) { return detail::setting_index(name) != detail::npos; }

bool RunSettings::is_flag(std::string_view name) {
  const Setting* setting = find_setting(name);
  return setting && setting->kind == SettingKind::flag;
}

std::vector<std::string> RunSettings::names() {
  std::vector<std::string> names;
  for (const Setting& setting : settings()) names.push_back(setting.name);
  return names;
}

void RunSettings::set(std::string_view name_value) {
  const auto eq = name_value.find('=');
  if (eq == std::string_view::npos) {
    throw OptionsError("setting '" + std::string(name_value) + "' is not of the form name=value");
  }
  set(name_value.substr(0, eq), name_value.substr(eq + 1));
}

void RunSettings::set(std::string_view raw_name, std::string_view v) {
  const std::size_t i = detail::setting_index(raw_name);
  if (i == detail::npos) {
    std::string names;
    for (const Setting& setting : settings()) names += (names.empty() ? "" : ", ") + setting.name;
    throw OptionsError("unknown setting '" + std::string(raw_name) + "'; the settings are " + names);
  }
  const detail::SettingRow& row = setting_rows()[i];
  // Errors use the name as the caller spelled it.
  const std::uint64_t value = detail::parse_setting(row, std::string(raw_name), v);
  if (row.load) row.load(script_, value);
  if (row.load_path) row.load_path(script_, v);
  std::erase_if(given_, [i](const auto& g) { return g.first == i; });
  given_.emplace_back(i, value);
}

std::optional<std::uint64_t> RunSettings::given(std::string_view name) const {
  const std::size_t i = detail::setting_index(name);
  for (const auto& [index, value] : given_) {
    if (index == i) return value;
  }
  return std::nullopt;
}

bool RunSettings::sets_shard() const { return given("rank") || given("world_size"); }

std::vector<std::pair<std::string, std::string>> RunSettings::values(const Options& options) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const detail::SettingRow& row : setting_rows()) {
    if (row.get) out.emplace_back(row.about.name, detail::setting_text(row, row.get(options)));
  }
  return out;
}

void RunSettings::apply(Options& o) const {
  for (const auto& [i, value] : given_) {
    const detail::SettingRow& row = setting_rows()[i];
    if (!row.load && row.apply) row.apply(o, value);
  }
  if (const auto global = given("global_batch_size")) {
    // After the world size is known (launcher or setting): the same global
    // batch on any number of ranks is what resumes on another world size.
    const auto g = static_cast<std::uint32_t>(*global);
    const auto batch_size = given("batch_size");
    if (g % o.world_size != 0) {
      throw OptionsError("global_batch_size " + std::to_string(g) + " is not divisible by the world size " +
                  std::to_string(o.world_size) + ": every rank takes global_batch_size / world_size samples per step");
    }
    if (batch_size && *batch_size != g / o.world_size) {
      throw OptionsError("batch_size " + std::to_string(*batch_size) + " and global_batch_size " + std::to_string(g) +
                  " disagree on " + std::to_string(o.world_size) + " ranks (" + std::to_string(g) + " / " +
                  std::to_string(o.world_size) + " = " + std::to_string(g / o.world_size) + "): give one of them");
    }
    o.batch_size = g / o.world_size;
  }
}

void RunSettings::apply_all(Options& o) const {
  for (const auto& [i, value] : given_) {
    const detail::SettingRow& row = setting_rows()[i];
    if (row.load && row.apply) row.apply(o, value);
  }
  apply_launch(o, detect_launch());
  apply(o);
  resolve_auto_workers(o);  // no script to do it
}

Script RunSettings::load(std::string* launcher) const {
  Script script = load_script(script_);
  const Launch launch = detect_launch();
  apply_launch(script.options, launch);
  apply(script.options);
  script.notes.insert(script.notes.end(), launch.warnings.begin(), launch.warnings.end());
  if (launcher) *launcher = launch.launcher;
  return script;
}

}  // namespace sluice
