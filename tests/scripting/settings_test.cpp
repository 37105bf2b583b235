// The table of run settings (sluice/settings.h) against every surface that
// names them: RunSettings, Options' defaults, `sluice run --help`,
// docs/command-line.md and what a pipeline.lua may set (sluice.lua).
#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "sluice/error.h"
#include "sluice/run_settings.h"
#include "sluice/script.h"
#include "sluice/settings.h"
#include "sluice/sluice.h"
#include "support.h"

using Catch::Contains;
using sluice::Setting;
using sluice::SettingKind;
using sluice::test::TempDir;

namespace {

// A value the setting takes: its default, or (unset by default) its smallest.
std::string valid_value(const Setting& s) { return s.default_value.empty() ? "1" : s.default_value; }

// A value the setting refuses: "bogus", or for a path (any text is one) none.
std::string bad_value(const Setting& s) { return s.kind == SettingKind::path ? "" : "bogus"; }

std::string dashed(std::string name) {
  for (char& c : name) c = c == '_' ? '-' : c;
  return name;
}

// The setting's value as pipeline.lua writes it.
std::string lua_value(const Setting& s, const std::string& text) {
  if (s.kind == SettingKind::count && text != "auto") return text;
  if (s.kind == SettingKind::flag) return text;
  return "\"" + text + "\"";
}

std::string pipeline(const std::string& extra) {
  return "local sluice = require(\"sluice\")\n"
         "return sluice.pipeline {\n"
         "  source = sluice.range(8),\n"
         "  fields = { { \"x\", \"float32\", { 2 } } },\n"
         "  map = function(i, ctx) return { x = ctx.out.x } end,\n" +
         extra + "}\n";
}

std::map<std::string, std::string> as_map(const std::vector<std::pair<std::string, std::string>>& values) {
  return {values.begin(), values.end()};
}

}  // namespace

TEST_CASE("every setting takes its default and names itself on a bad value", "[settings]") {
  REQUIRE(!sluice::settings().empty());
  for (const Setting& s : sluice::settings()) {
    INFO(s.name);
    CHECK(sluice::RunSettings::known(s.name));
    CHECK(sluice::RunSettings::known("--" + dashed(s.name)));
    CHECK(sluice::RunSettings::is_flag(s.name) == (s.kind == SettingKind::flag));
    CHECK(sluice::find_setting(dashed(s.name)) == &s);
    CHECK(!s.takes.empty());
    CHECK(!s.help.empty());
    sluice::RunSettings settings;
    CHECK_NOTHROW(settings.set(s.name, valid_value(s)));
    CHECK_NOTHROW(settings.set(s.name + "=" + valid_value(s)));
    CHECK_THROWS_WITH(settings.set(s.name, bad_value(s)),
                      Contains(s.name + " expects ") && Contains("got '" + bad_value(s) + "'"));
    CHECK_THROWS_WITH(settings.set(dashed(s.name), bad_value(s)), Contains(dashed(s.name) + " expects "));
  }
  std::vector<std::string> names;
  for (const Setting& s : sluice::settings()) names.push_back(s.name);
  CHECK(sluice::RunSettings::names() == names);
  CHECK(std::set<std::string>(names.begin(), names.end()).size() == names.size());
}

TEST_CASE("the defaults are what Options hold unset, and values() reads back", "[settings]") {
  const sluice::Options o;
  const auto values = sluice::RunSettings::values(o);
  for (const auto& [name, text] : values) {
    INFO(name);
    const Setting* s = sluice::find_setting(name);
    REQUIRE(s);
    CHECK(text == s->default_value);
  }
  // Settings Options hold, through set() and apply_all() and back.
  sluice::RunSettings settings;
  settings.set("worker_memory_mb", "64");
  settings.set("prefetch", "7");  // sets Options::slots
  settings.set("on_error", "skip");
  settings.set("shuffle", "true");
  settings.set("workers", "3");
  settings.set("rank", "1");
  settings.set("world_size", "2");
  sluice::Options applied;
  settings.apply_all(applied);
  CHECK(applied.worker_memory_mb == 64);
  CHECK(applied.slots == 7);
  const auto back = as_map(sluice::RunSettings::values(applied));
  CHECK(back.at("worker_memory_mb") == "64");
  CHECK(back.at("prefetch") == "7");
  CHECK(back.at("on_error") == "skip");
  CHECK(back.at("shuffle") == "true");
  CHECK(back.at("workers") == "3");
  CHECK(back.at("world_size") == "2");
  CHECK(!back.contains("device"));
}

TEST_CASE("docs/command-line.md has a row for every setting, as the table says", "[settings]") {
  std::ifstream file(SLUICE_DOCS_DIR "/command-line.md");
  REQUIRE(file);
  std::stringstream text;
  text << file.rdbuf();
  for (const Setting& s : sluice::settings()) {
    const std::string row = "| `" + s.name + "` | " + s.takes + " | " +
                            (s.default_value.empty() ? "none" : s.default_value) + " | " + (s.pipeline ? "yes" : "no") +
                            " | " + s.help + " |";
    INFO("expected the row\n" << row);
    CHECK_THAT(text.str(), Contains(row));
  }
}

TEST_CASE("what pipeline.lua may set is the table's, and each takes its default", "[settings]") {
  TempDir dir;
  std::set<std::string> in_table;
  for (const Setting& s : sluice::settings()) {
    if (!s.pipeline) continue;
    in_table.insert(s.name);
    INFO(s.name);
    const std::string path =
        dir.write(s.name + ".lua", pipeline("  " + s.name + " = " + lua_value(s, s.default_value) + ",\n"));
    sluice::Script script;
    REQUIRE_NOTHROW(script = sluice::load_script({.path = path}));
    const auto values = as_map(sluice::RunSettings::values(script.options));
    if (values.contains(s.name)) CHECK(values.at(s.name) == s.default_value);
  }
  // A script that sets nothing has every default.
  const sluice::Script plain = sluice::load_script({.path = dir.write("plain.lua", pipeline(""))});
  for (const auto& [name, text] : sluice::RunSettings::values(plain.options)) {
    INFO(name);
    CHECK(text == sluice::find_setting(name)->default_value);
  }
  // sluice.lua names what it accepts when it meets a name it does not; less
  // the pipeline's own parts, that is the table's pipeline settings.
  const std::string bogus = dir.write("bogus.lua", pipeline("  bogus = 1,\n"));
  std::string message;
  try {
    (void)sluice::load_script({.path = bogus});
  } catch (const sluice::Error& e) {
    message = e.what();
  }
  const std::string before = "(options: ";
  const auto at = message.find(before);
  REQUIRE(at != std::string::npos);
  std::string list = message.substr(at + before.size());
  list = list.substr(0, list.find(')'));
  std::set<std::string> in_lua;
  std::stringstream names(list);
  for (std::string name; std::getline(names, name, ',');) {
    while (name.starts_with(" ")) name.erase(0, 1);
    in_lua.insert(name);
  }
  for (const char* own : {"source", "map", "map_batch", "fields", "read_ahead", "io_threads", "pack"}) {
    CHECK(in_lua.erase(own) == 1);
  }
  CHECK(in_lua == in_table);
}

TEST_CASE("a run setting that pipeline.lua cannot set says where it is given", "[settings]") {
  TempDir dir;
  int checked = 0;
  for (const Setting& s : sluice::settings()) {
    if (s.pipeline) continue;
    INFO(s.name);
    std::string flag = s.name;
    std::replace(flag.begin(), flag.end(), '_', '-');
    const std::string path = dir.write(s.name + ".lua", pipeline("  " + s.name + " = 1,\n"));
    CHECK_THROWS_WITH(sluice::load_script({.path = path}),
                      Contains("sluice.pipeline: unknown option '" + s.name + "': '" + s.name + "' is a run setting") &&
                          Contains("on the command line (--" + flag + " VALUE), in Python as a keyword (" + s.name +
                                   "=VALUE)") &&
                          Contains("it takes " + s.takes));
    ++checked;
  }
  CHECK(checked > 0);  // cache_limit_mb among them
}

#ifdef SLUICE_CLI
TEST_CASE("sluice run --help lists every setting from the table", "[settings][cli]") {
  const sluice::test::CliResult r = sluice::test::run_cli({"run", "--help"});
  REQUIRE(r.status == 0);
  std::string flat;  // the help with its line breaks and indents as single spaces
  for (char c : r.out) {
    if (c == '\n') c = ' ';
    if (c != ' ' || !flat.ends_with(' ')) flat += c;
  }
  for (const Setting& s : sluice::settings()) {
    INFO(s.name);
    CHECK_THAT(flat, Contains(s.help));
    CHECK_THAT(r.out, Contains("--" + dashed(s.name)));
    if (s.kind == SettingKind::flag) CHECK_THAT(r.out, Contains("--no-" + dashed(s.name)));
    if (!s.default_value.empty()) CHECK_THAT(flat, Contains(s.help + " (default " + s.default_value + ")"));
  }
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    INFO(line);
    CHECK(line.size() <= 80);
  }
}
#endif

TEST_CASE("a bad value of every setting gets the same message from C, the command line, pipeline.lua and C++",
          "[settings][cli]") {
  TempDir dir;
  const std::string script = dir.write("p.lua", pipeline(""));
  for (const Setting& s : sluice::settings()) {
    INFO(s.name);
    const std::string bogus = bad_value(s);
    std::string expected;
    try {
      sluice::RunSettings().set(s.name, bogus);
    } catch (const sluice::Error& e) {
      expected = e.what();
    }
    REQUIRE(!expected.empty());

    const std::string override = s.name + "=" + bogus;
    const char* overrides[] = {override.c_str(), nullptr};
    sluice_loader* loader = nullptr;
    CHECK(sluice_loader_open_script(script.c_str(), overrides, &loader) == SLUICE_INVALID_ARGUMENT);
    CHECK(loader == nullptr);
    CHECK(std::string(sluice_last_error()) == expected);

    // A flag alone means true (--shuffle): its value goes with '='.
    // pipeline.lua's own check comes from the same table (device excepted: a
    // pipeline may ask for cuda, which an override in this build may not).
    if (s.pipeline && s.name != "device") {
      const std::string bad = dir.write(s.name + ".lua", pipeline("  " + s.name + " = \"" + bogus + "\",\n"));
      CHECK_THROWS_WITH(sluice::load_script({.path = bad}), Contains("sluice.pipeline: " + expected));
    }

    const sluice::test::CliResult r = s.kind == SettingKind::flag
                                          ? sluice::test::run_cli({"run", script, "--" + s.name + "=" + bogus})
                                          : sluice::test::run_cli({"run", script, "--" + s.name, bogus});
    CHECK(r.status == 2);
    CHECK_THAT(r.err, Contains(expected));
  }
}
