#include <catch2/catch.hpp>
#include <algorithm>
#include <filesystem>
#include <chrono>
#include <fstream>
#include <set>
#include <thread>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "io_test_support.h"
#include "sluice/error.h"
#include "sluice/io/jsonl.h"
#include "skip.h"

using namespace sluice::io;
namespace fs = std::filesystem;
using Catch::Matchers::Contains;

namespace {

// Blank lines, a CRLF line, escapes and a last line without a newline: the
// samples are lines 1, 2, 4, 5 and 6.
const std::string kCorpus =
    "{\"text\": \"hello\", \"id\": 1, \"meta\": {\"lang\": \"en\", \"body\": \"inner\"}}\n"
    "{\"id\": 2, \"text\": \"caf\\u00e9 \\ud83d\\ude00 \\\"q\\\"\\n\", \"tags\": [1, 2]}\n"
    "   \n"
    "{\"text\": \"third\", \"id\": 3, \"meta\": {\"body\": \"b3\"}}\r\n"
    "{\"text\": \"\", \"id\": 4, \"ok\": true, \"none\": null}\n"
    "{\"text\": \"last\", \"id\": -5.5e3}";

std::string write_text(const test::TempDir& dir, const std::string& name, const std::string& text) {
  std::ofstream(dir.file(name), std::ios::binary) << text;
  return dir.file(name);
}

// Compresses `plain` with the gzip or zstd command (an independent writer);
// `parts` > 1 writes that many members/frames, one per slice of the lines.
std::string compress(const test::TempDir& dir, const std::string& tool, const std::string& name,
                     const std::string& text, int parts = 1) {
  const std::string out = dir.file(name);
  std::ofstream(out, std::ios::binary | std::ios::trunc);
  const std::size_t step = text.size() / static_cast<std::size_t>(parts) + 1;
  for (int p = 0; p < parts; ++p) {
    const std::string slice = text.substr(std::min(text.size(), p * step), step);
    const std::string in = write_text(dir, "slice", slice);
    const std::string cmd = tool + " -c -q " + in + " >> " + out;
    REQUIRE(std::system(cmd.c_str()) == 0);
  }
  return out;
}

bool have(const std::string& tool) { return std::system(("command -v " + tool + " >/dev/null").c_str()) == 0; }

std::string field(const Sample& s, std::string_view name) {
  const Field* f = s.field(name);
  return f ? test::text_of(f->bytes) : "<absent>";
}

void check_corpus(const JsonlSource& source, const std::string& given) {
  REQUIRE(source.size() == 5);
  std::vector<std::byte> buf;
  Sample s;
  read_sample(source, 0, buf, s);
  CHECK(s.fields[0].name == "text");
  CHECK(field(s, "text") == "hello");
  CHECK(field(s, "id") == "1");
  CHECK(field(s, "meta") == "{\"lang\": \"en\", \"body\": \"inner\"}");
  CHECK(s.path == given);
  read_sample(source, 1, buf, s);
  CHECK(field(s, "text") == "caf\xc3\xa9 \xf0\x9f\x98\x80 \"q\"\n");
  CHECK(field(s, "tags") == "[1, 2]");
  CHECK(source.where(2) == given + ": line 4");
  read_sample(source, 2, buf, s);
  CHECK(field(s, "text") == "third");
  read_sample(source, 3, buf, s);
  CHECK(field(s, "text") == "");
  CHECK(field(s, "ok") == "true");
  CHECK(field(s, "none") == "null");
  read_sample(source, 4, buf, s);
  CHECK(field(s, "text") == "last");
  CHECK(field(s, "id") == "-5.5e3");
  CHECK(source.where(4) == given + ": line 6");
}

}  // namespace

TEST_CASE("jsonl: plain, gzip and zstd files give the same samples, line numbers and keys", "[jsonl]") {
  test::TempDir dir;
  const std::string plain = write_text(dir, "a.jsonl", kCorpus);
  check_corpus(JsonlSource({plain}), plain);
  CHECK(fs::exists(plain + ".idx"));
  if (!have("gzip") || !have("zstd")) SKIP_TEST("the gzip or zstd command is absent (they write the test files)");
  for (int parts : {1, 3}) {
    INFO("members/frames: " << parts);
    const std::string gz = compress(dir, "gzip", "b" + std::to_string(parts) + ".jsonl.gz", kCorpus, parts);
    const std::string zst = compress(dir, "zstd", "c" + std::to_string(parts) + ".jsonl.zst", kCorpus, parts);
    check_corpus(JsonlSource({gz}), gz);
    check_corpus(JsonlSource({zst}), zst);
    CHECK(fs::exists(gz + ".plain"));
    CHECK(fs::exists(zst + ".idx"));
  }
  // Several files number their samples one after the other.
  const std::string gz = dir.file("b1.jsonl.gz");
  JsonlSource both({plain, gz});
  CHECK(both.size() == 10);
  CHECK(both.where(7) == gz + ": line 4");
}

TEST_CASE("jsonl: a UTF-8 byte-order mark before the first line is not part of it, plain or compressed", "[jsonl]") {
  // As Python's utf-8-sig and Windows tools write it; a BOM elsewhere stays an error.
  test::TempDir dir;
  const std::string text = "\xEF\xBB\xBF" + kCorpus;
  const std::string plain = write_text(dir, "bom.jsonl", text);
  check_corpus(JsonlSource({plain}), plain);
  if (have("zstd")) {
    const std::string zst = compress(dir, "zstd", "bom.jsonl.zst", text);
    check_corpus(JsonlSource({zst}), zst);
  }
  const std::string inner = write_text(dir, "inner.jsonl", "{\"text\": \"a\"}\n\xEF\xBB\xBF{\"text\": \"b\"}\n");
  JsonlSource source({inner});
  std::vector<std::byte> buf;
  Sample s;
  read_sample(source, 0, buf, s);
  CHECK(field(s, "text") == "a");
  CHECK_THROWS_WITH(read_sample(source, 1, buf, s), Catch::Contains(inner + ": line 2: column 1"));
  // A mark before a blank first line leaves it blank: not a sample.
  const std::string blank = write_text(dir, "blank.jsonl", "\xEF\xBB\xBF  \n{\"text\": \"c\"}\n");
  JsonlSource after_blank({blank});
  REQUIRE(after_blank.size() == 1);
  read_sample(after_blank, 0, buf, s);
  CHECK(field(s, "text") == "c");
  CHECK(after_blank.where(0) == blank + ": line 2");
}

TEST_CASE("jsonl: the sidecar index and the decompressed copy are reused, and rebuilt when stale", "[jsonl]") {
  test::TempDir dir;
  const std::string plain = write_text(dir, "a.jsonl", kCorpus);
  JsonlSource first({plain});
  const auto stamp = fs::last_write_time(plain + ".idx");
  JsonlSource second({plain});
  CHECK(fs::last_write_time(plain + ".idx") == stamp);
  CHECK(second.size() == 5);
  // A changed file: the index is older than it, so the file is scanned again.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  write_text(dir, "a.jsonl", "{\"text\": \"only\"}\n");
  JsonlSource third({plain});
  CHECK(third.size() == 1);
  // A sidecar that disagrees with the file's size is ignored.
  write_text(dir, "a.jsonl.idx", "sluice-jsonl-index 2 999 1 1\n0 10 1\n");
  CHECK(!load_jsonl_index(plain + ".idx", plain));
  CHECK(JsonlSource({plain}).size() == 1);
  // An edit in place that keeps the size, and a copy over the file with an
  // older time than the index's: the index names the time it was built for.
  write_text(dir, "a.jsonl", "{\"text\": \"x\"}\n{\"text\": \"y\"}\n");
  CHECK(JsonlSource({plain}).size() == 2);
  write_text(dir, "a.jsonl", "{\"text\": \"x\", \"text2\":\"!\"}\n\n");
  const auto old = fs::last_write_time(plain) - std::chrono::hours(1);
  fs::last_write_time(plain, old);
  CHECK(JsonlSource({plain}).size() == 1);
  // index_dir keeps sidecars (and copies) elsewhere.
  test::TempDir other;
  JsonlOptions options;
  options.index_dir = other.path().string();
  const std::string fresh = write_text(dir, "fresh.jsonl", kCorpus);
  CHECK(JsonlSource({fresh}, options).size() == 5);
  CHECK(!fs::exists(fresh + ".idx"));
  CHECK(std::distance(fs::directory_iterator(other.path()), fs::directory_iterator()) == 1);
  if (!have("gzip")) SKIP_TEST("the gzip command is absent");
  const std::string gz = compress(dir, "gzip", "b.jsonl.gz", kCorpus);
  JsonlSource g1({gz});
  const auto copy_stamp = fs::last_write_time(gz + ".plain");
  JsonlSource g2({gz});
  CHECK(fs::last_write_time(gz + ".plain") == copy_stamp);
  check_corpus(g2, gz);
  // Replaced by another version with an older time (cp -p, rsync -a, tar x):
  // the copy was made from another file, so it is made again.
  const std::string newer = compress(dir, "gzip", "other.jsonl.gz", "{\"text\": \"new\"}\n");
  fs::copy_file(newer, gz, fs::copy_options::overwrite_existing);
  fs::last_write_time(gz, copy_stamp - std::chrono::hours(1));
  JsonlSource g3({gz});
  REQUIRE(g3.size() == 1);
  std::vector<std::byte> buf;
  Sample s;
  read_sample(g3, 0, buf, s);
  CHECK(field(s, "text") == "new");
}

TEST_CASE("jsonl: a malformed line is an error naming the file and line, and the other lines still read", "[jsonl]") {
  test::TempDir dir;
  const std::string path = write_text(dir, "bad.jsonl",
                                      "{\"text\": \"good\"}\n"
                                      "{\"text\": \"broken\", \"id\": }\n"
                                      "{\"id\": 3}\n"
                                      "[1, 2]\n"
                                      "{\"text\": \"ctl\x01\"}\n"
                                      "{\"text\": \"\\ud800\"}\n"
                                      "{\"text\": \"x\"} trailing\n"
                                      "{\"text\": \"fine\"}\n");
  JsonlSource source({path});
  REQUIRE(source.size() == 8);
  std::vector<std::byte> buf;
  Sample s;
  read_sample(source, 0, buf, s);
  CHECK(field(s, "text") == "good");
  CHECK_THROWS_WITH(read_sample(source, 1, buf, s), Contains(path + ": line 2: column 26: not a JSON value"));
  CHECK_THROWS_WITH(read_sample(source, 2, buf, s), Contains(path + ": line 3: no key 'text'"));
  CHECK_THROWS_WITH(read_sample(source, 3, buf, s), Contains(path + ": line 4: column 1: the line is not a JSON object"));
  CHECK_THROWS_WITH(read_sample(source, 4, buf, s), Contains("line 5: column 14: a control character inside a string"));
  CHECK_THROWS_WITH(read_sample(source, 5, buf, s), Contains("line 6: column 17: a high surrogate without its low one"));
  CHECK_THROWS_WITH(read_sample(source, 6, buf, s), Contains("line 7: column 15: text after the object"));
  read_sample(source, 7, buf, s);
  CHECK(field(s, "text") == "fine");
  // Nesting is bounded, not a stack overflow.
  const std::string deep = write_text(dir, "deep.jsonl", "{\"text\": " + std::string(100000, '[') + "}\n");
  CHECK_THROWS_WITH(read_sample(JsonlSource({deep}), 0, buf, s), Contains("nested deeper than 256"));
}

TEST_CASE("jsonl: strings are UTF-8, other bytes an error naming the line, column and byte", "[jsonl]") {
  test::TempDir dir;
  const std::string path = write_text(dir, "u.jsonl",
                                      "{\"text\": \"caf\xC3\xA9 \xE4\xB8\xAD \xF0\x9F\x98\x80\"}\n"   // 2, 3, 4 bytes
                                      "{\"text\": \"\\n\xC3\xA9\xF4\x8F\xBF\xBF\"}\n"             // after an escape; U+10FFFF
                                      "{\"text\": \"latin-1 caf\xE9\"}\n"                     // Latin-1
                                      "{\"text\": \"\xC0\xAF\"}\n"                            // overlong '/'
                                      "{\"text\": \"\xED\xA0\x80\"}\n"                        // a surrogate
                                      "{\"text\": \"\\t\xF0\x9F\x98\"}\n"                    // cut, after an escape
                                      "{\"text\": \"\xF4\x90\x80\x80\"}\n"                    // past U+10FFFF
                                      "{\"t\xFF\": 1, \"text\": \"x\"}\n");                    // in a key
  JsonlSource source({path});
  std::vector<std::byte> buf;
  Sample s;
  read_sample(source, 0, buf, s);
  CHECK(field(s, "text") == "caf\xC3\xA9 \xE4\xB8\xAD \xF0\x9F\x98\x80");
  read_sample(source, 1, buf, s);
  CHECK(field(s, "text") == "\n\xC3\xA9\xF4\x8F\xBF\xBF");
  CHECK_THROWS_WITH(read_sample(source, 2, buf, s),
                    Contains(path + ": line 3: column 22: a byte that is not UTF-8 inside a string (0xE9") &&
                        Contains("on_error = \"skip\""));
  CHECK_THROWS_WITH(read_sample(source, 3, buf, s), Contains("line 4: column 11: a byte that is not UTF-8 inside a string (0xC0"));
  CHECK_THROWS_WITH(read_sample(source, 4, buf, s), Contains("line 5: column 11: a byte that is not UTF-8 inside a string (0xED"));
  CHECK_THROWS_WITH(read_sample(source, 5, buf, s), Contains("line 6: column 13: a byte that is not UTF-8 inside a string (0xF0"));
  CHECK_THROWS_WITH(read_sample(source, 6, buf, s), Contains("line 7: column 11: a byte that is not UTF-8 inside a string (0xF4"));
  CHECK_THROWS_WITH(read_sample(source, 7, buf, s), Contains("line 8: column 4: a byte that is not UTF-8 inside a string (0xFF"));
}

TEST_CASE("jsonl: a FIFO, a device or a directory given as a file is refused at once, not waited on", "[jsonl]") {
  test::TempDir dir;
  const std::string fifo = dir.file("pipe.jsonl");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  // No writer ever comes: an open() that waited for one would hang here.
  CHECK_THROWS_WITH(JsonlSource({fifo}), Contains(fifo + ": a FIFO (named pipe), not a file of data"));
  const std::string zero = dir.file("zero.jsonl");
  fs::create_symlink("/dev/zero", zero);
  CHECK_THROWS_WITH(JsonlSource({zero}), Contains(zero + ": a device, not a file of data"));
  fs::create_directory(dir.file("folder.jsonl"));
  CHECK_THROWS_WITH(JsonlSource({dir.file("folder.jsonl")}), Contains("folder.jsonl: a directory, not a file of data"));
}

TEST_CASE("jsonl: what a killed indexer left is removed by the next one, what a live one writes is not", "[jsonl]") {
  test::TempDir dir;
  const std::string path = write_text(dir, "k.jsonl", kCorpus);
  const pid_t dead = ::fork();
  if (dead == 0) ::_exit(0);
  ::waitpid(dead, nullptr, 0);  // a PID no process has now
  const std::string stale = path + ".idx.tmp" + std::to_string(dead);
  const std::string young = path + ".idx.tmp" + std::to_string(dead) + "0";  // dead too, but written just now
  const std::string live = path + ".idx.tmp1";                                // PID 1 lives
  for (const std::string& f : {stale, young, live}) write_text(dir, fs::path(f).filename().string(), "partial index");
  for (const std::string& f : {stale, live}) fs::last_write_time(f, fs::file_time_type::clock::now() - std::chrono::minutes(5));
  JsonlSource source({path});  // writes k.jsonl.idx
  CHECK(fs::exists(path + ".idx"));
  CHECK_FALSE(fs::exists(stale));
  CHECK(fs::exists(young));
  CHECK(fs::exists(live));
}

TEST_CASE("jsonl: field_is_text refuses a selected value that is not a string, by the key that wins", "[jsonl]") {
  test::TempDir dir;
  const std::string path = write_text(dir, "t.jsonl",
                                      "{\"text\": 12}\n"
                                      "{\"meta.text\": null, \"meta\": {\"text\": \"x\"}}\n"    // the top-level key wins: null
                                      "{\"meta.text\": \"doc\", \"meta\": {\"text\": 5}}\n"      // the top-level key wins: a string
                                      "{\"meta\": {\"text\": [1, 2]}}\n"                          // along the path: an array
                                      "{\"meta\": {\"text\": \"nested\"}}\n");
  std::vector<std::byte> buf;
  Sample s;
  JsonlOptions plain;
  plain.field_is_text = true;
  CHECK_THROWS_WITH(read_sample(JsonlSource({path}, plain), 0, buf, s),
                    Contains(path + ": line 1: \"text\" is 12, not a string"));
  JsonlOptions dotted = plain;
  dotted.field = "meta.text";
  JsonlSource source({path}, dotted);
  CHECK_THROWS_WITH(read_sample(source, 1, buf, s), Contains("line 2: \"meta.text\" is null, not a string"));
  read_sample(source, 2, buf, s);
  CHECK(field(s, "meta.text") == "doc");
  CHECK_THROWS_WITH(read_sample(source, 3, buf, s), Contains("line 4: \"meta.text\" is [1, 2], not a string"));
  read_sample(source, 4, buf, s);
  CHECK(field(s, "meta.text") == "nested");
  // Without field_is_text any value reaches a map as its JSON text.
  read_sample(JsonlSource({path}), 0, buf, s);
  CHECK(field(s, "text") == "12");
}

TEST_CASE("jsonl: a key given twice is read as its last value, as Python's json reads it", "[jsonl]") {
  test::TempDir dir;
  const std::string path = write_text(dir, "dup.jsonl",
                                      "{\"text\": \"first\", \"id\": 1, \"text\": \"last\"}\n"
                                      "{\"meta\": {\"body\": \"a\"}, \"meta\": {\"n\": 2}}\n"
                                      "{\"meta\": {\"body\": \"a\", \"body\": \"b\"}}\n");
  std::vector<std::byte> buf;
  Sample s;
  JsonlSource text({path});
  read_sample(text, 0, buf, s);
  REQUIRE(s.fields.size() == 2);  // text once (the selected field, first), id
  CHECK(s.fields[0].name == "text");
  CHECK(field(s, "text") == "last");
  CHECK(field(s, "id") == "1");
  JsonlOptions nested;
  nested.field = "meta.body";
  JsonlSource deep({path}, nested);
  CHECK_THROWS_WITH(read_sample(deep, 1, buf, s), Contains("line 2: no key 'meta.body'"));  // the last meta has none
  read_sample(deep, 2, buf, s);
  CHECK(field(s, "meta.body") == "b");
  // Many keys (found repeated by sorting them): the same rule.
  std::string wide = "{\"text\": 1";
  for (int k = 0; k < 20; ++k) wide += ", \"k" + std::to_string(k) + "\": " + std::to_string(k);
  wide += ", \"text\": \"wide\"}\n";
  JsonlOptions as_text;
  as_text.field_is_text = true;
  JsonlSource many({write_text(dir, "wide.jsonl", wide)}, as_text);
  read_sample(many, 0, buf, s);
  CHECK(s.fields.size() == 21);
  CHECK(field(s, "text") == "wide");  // a string: the first "text", a number, is not the one read
  CHECK(field(s, "k19") == "19");
}

TEST_CASE("jsonl: field selects a nested key, or a top-level key spelled with a dot", "[jsonl]") {
  test::TempDir dir;
  const std::string path = write_text(dir, "n.jsonl",
                                      "{\"meta\": {\"body\": \"deep\", \"n\": 1}, \"id\": 1}\n"
                                      "{\"meta.body\": \"flat\", \"meta\": {\"body\": \"deep\"}}\n"
                                      "{\"meta\": {\"n\": 2}}\n"
                                      "{\"meta\": {\"body\": [\"a\", {\"k\": 1}]}}\n");
  JsonlOptions options;
  options.field = "meta.body";
  JsonlSource source({path}, options);
  std::vector<std::byte> buf;
  Sample s;
  read_sample(source, 0, buf, s);
  CHECK(s.fields[0].name == "meta.body");
  CHECK(field(s, "meta.body") == "deep");
  CHECK(field(s, "id") == "1");
  CHECK(field(s, "meta") == "{\"body\": \"deep\", \"n\": 1}");
  read_sample(source, 1, buf, s);
  CHECK(field(s, "meta.body") == "flat");
  CHECK_THROWS_WITH(read_sample(source, 2, buf, s), Contains(path + ": line 3: no key 'meta.body'"));
  read_sample(source, 3, buf, s);
  CHECK(field(s, "meta.body") == "[\"a\", {\"k\": 1}]");
}

TEST_CASE("jsonl: a cut plain file ends in a bad last line, a cut compressed one stops at load or keeps its whole lines", "[jsonl]") {
  test::TempDir dir;
  std::string text;
  for (int i = 0; i < 6000; ++i) text += "{\"text\": \"line " + std::to_string(i) + " " + std::string(40, 'x') + "\"}\n";
  const std::string plain = write_text(dir, "cut.jsonl", text.substr(0, text.size() - 10));
  JsonlSource source({plain});
  REQUIRE(source.size() == 6000);
  std::vector<std::byte> buf;
  Sample s;
  read_sample(source, 5998, buf, s);
  CHECK_THROWS_WITH(read_sample(source, 5999, buf, s), Contains(plain + ": line 6000: column"));
  if (!have("gzip") || !have("zstd")) SKIP_TEST("the gzip or zstd command is absent (they write the test files)");
  for (const std::string tool : {"gzip", "zstd"}) {
    INFO(tool);
    const std::string whole = compress(dir, tool, "whole." + tool, text);
    std::vector<std::byte> bytes = test::read_file(whole);
    bytes.resize(bytes.size() * 2 / 3);
    const std::string cut = dir.file("cut." + tool);
    test::write_file(cut, bytes);
    CHECK_THROWS_WITH(JsonlSource({cut}), Contains(cut + ": the " + tool + " stream is cut short after"));
    CHECK(!fs::exists(cut + ".plain"));
    JsonlOptions skip;
    skip.on_error = sluice::OnError::skip;
    JsonlSource kept({cut}, skip);
    CHECK(kept.size() > 0);
    CHECK(kept.size() < 6000);
    REQUIRE(kept.index_skips().count() == 1);
    CHECK_THAT(kept.index_skips().entries()[0].reason, Contains("cut short"));
    CHECK(kept.files()[0] == cut + ".plain.cut");
    for (std::uint64_t i = 0; i < kept.size(); ++i) {
      read_sample(kept, i, buf, s);
      CHECK(field(s, "text").rfind("line " + std::to_string(i) + " ", 0) == 0);
    }
    // The file mended: its whole copy replaces the damaged one, which is gone.
    fs::copy_file(whole, cut, fs::copy_options::overwrite_existing);
    CHECK(JsonlSource({cut}).size() == 6000);
    CHECK(fs::exists(cut + ".plain"));
    CHECK(!fs::exists(cut + ".plain.cut"));
    // Corrupt bytes in the middle: an error naming the file, not garbage.
    bytes = test::read_file(whole);
    for (std::size_t k = bytes.size() / 3; k < bytes.size() / 3 + 64; ++k) bytes[k] = std::byte{0x55};
    const std::string corrupt = dir.file("corrupt." + tool);
    test::write_file(corrupt, bytes);
    CHECK_THROWS_WITH(JsonlSource({corrupt}), Contains(corrupt + ": corrupt " + tool + " data"));
    // Under skip, corrupt input keeps none of what it decompressed since the
    // last member or frame that passed its check: one byte flipped in the
    // second of two members leaves the first member's whole lines, and not
    // one line of garbage.
    const std::string two = compress(dir, tool, "two." + tool, text, 2);
    bytes = test::read_file(two);
    bytes[bytes.size() * 3 / 4] ^= std::byte{0xff};
    test::write_file(corrupt, bytes);
    JsonlSource checked({corrupt}, skip);
    const std::string first_member = text.substr(0, text.size() / 2 + 1);  // compress()'s first part
    CHECK(checked.size() == static_cast<std::uint64_t>(std::count(first_member.begin(), first_member.end(), '\n')));
    for (std::uint64_t i = 0; i < checked.size(); ++i) {
      read_sample(checked, i, buf, s);
      CHECK(field(s, "text") == "line " + std::to_string(i) + " " + std::string(40, 'x'));
    }
    REQUIRE(checked.index_skips().count() == 1);
    CHECK_THAT(checked.index_skips().entries()[0].reason,
               Contains(corrupt + ": corrupt " + tool + " data") && Contains("which passed their check, are used"));
    CHECK(fs::file_size(checked.files()[0]) == first_member.rfind('\n') + 1);  // no unchecked byte in the copy
    // One member, corrupt: none of its lines.
    bytes = test::read_file(whole);
    bytes[bytes.size() / 2] ^= std::byte{0xff};
    test::write_file(corrupt, bytes);
    JsonlSource none({corrupt}, skip);
    CHECK(none.size() == 0);
    REQUIRE(none.index_skips().count() == 1);
    CHECK_THAT(none.index_skips().entries()[0].reason, Contains("none of its lines are used"));
  }
}

TEST_CASE("jsonl: processes that open one compressed file at once all read it whole, and leave no temp file", "[jsonl]") {
  if (!have("zstd")) SKIP_TEST("the zstd command is absent (it writes the test file)");
  test::TempDir dir;
  std::string text;
  for (int i = 0; i < 20000; ++i) text += "{\"text\": \"line " + std::to_string(i) + "\"}\n";
  const std::string zst = compress(dir, "zstd", "shared.jsonl.zst", text);
  std::filesystem::remove(dir.file("slice"));
  for (int round = 0; round < 3; ++round) {
    INFO("round " << round);
    std::vector<pid_t> children;
    for (int c = 0; c < 6; ++c) {
      const pid_t pid = fork();
      REQUIRE(pid >= 0);
      if (pid == 0) {
        int status = 0;
        try {
          JsonlSource source({zst});
          std::vector<std::byte> buf;
          Sample s;
          if (source.size() != 20000) status = 2;
          for (std::uint64_t id = 0; id < source.size() && status == 0; id += 997) {
            read_sample(source, id, buf, s);
            if (field(s, "text") != "line " + std::to_string(id)) status = 3;
          }
        } catch (...) {
          status = 4;
        }
        _exit(status);
      }
      children.push_back(pid);
    }
    for (pid_t pid : children) {
      int status = 0;
      REQUIRE(waitpid(pid, &status, 0) == pid);
      CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
    }
    std::set<std::string> left;
    for (const auto& e : fs::directory_iterator(dir.path())) left.insert(e.path().filename().string());
    CHECK(left == std::set<std::string>{"shared.jsonl.zst", "shared.jsonl.zst.idx", "shared.jsonl.zst.plain"});
    if (round == 1) fs::remove(dir.file("shared.jsonl.zst.idx"));  // the next round rebuilds it, racing
  }
}
