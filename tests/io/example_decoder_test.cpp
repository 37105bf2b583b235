// tf.train.Example's decoder (src/example_decoder.h) against independent
// oracles: what libprotobuf-lite made of 299 random messages
// (data/example_oracle), hand-assembled bytes whose values protobuf's rules
// fix, and malformed input of every kind.
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <span>
#include <string>
#include <vector>

#include "sluice/error.h"
#include "sluice/io/example.h"

using namespace sluice::io;
using Catch::Matchers::Contains;

namespace {

std::vector<std::byte> from_hex(std::string_view hex) {
  std::vector<std::byte> out;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2)
    out.push_back(static_cast<std::byte>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
  return out;
}

std::string to_hex(std::string_view s) {
  std::string out;
  char b[4];
  for (unsigned char c : s) {
    std::snprintf(b, sizeof b, "%02x", c);
    out += b;
  }
  return out;
}

// One feature as the oracle file writes it: " kind:count[v,v,]".
std::string dump_feature(const Example& ex, const std::string& name, std::size_t step) {
  const FeatureKind k = ex.kind(name, step);
  std::string out = " " + std::string(feature_kind_name(k)) + ":" + std::to_string(ex.count(name, step)) + "[";
  char b[24];
  if (k == FeatureKind::float_list)
    for (float f : ex.floats(name, step)) {
      std::uint32_t u;
      std::memcpy(&u, &f, 4);
      std::snprintf(b, sizeof b, "%08x,", u);
      out += b;
    }
  if (k == FeatureKind::int64_list)
    for (std::int64_t v : ex.int64s(name, step)) out += std::to_string(v) + ",";
  if (k == FeatureKind::bytes_list)
    for (std::string_view v : ex.bytes(name, step)) out += to_hex(v) + ",";
  return out + "]";
}

std::string dump(const Example& ex) {
  std::string out;
  for (const FeatureInfo& f : ex.features())
    out += "  F " + to_hex(f.name) + dump_feature(ex, f.name, Example::kFeatures) + "\n";
  for (const FeatureInfo& l : ex.feature_lists()) {
    out += "  L " + to_hex(l.name) + " " + std::string(feature_kind_name(l.kind)) + " " + std::to_string(l.count) + "\n";
    for (std::size_t t = 0; t < l.count; ++t)
      out += "   S" + std::to_string(t) + dump_feature(ex, l.name, t) + "\n";
  }
  return out;
}

// parse() then parse_sequence() of `bytes`, in the oracle file's format.
std::string decode_both(std::span<const std::byte> bytes) {
  Example ex;
  std::string out;
  try {
    ex.parse(bytes);
    out += " EX ok\n" + dump(ex);
  } catch (const sluice::Error& e) {
    out += std::strstr(e.what(), "SequenceExample, not") ? " EX err SEQ\n" : " EX err\n";
  }
  try {
    ex.parse_sequence(bytes);
    out += " SQ ok\n" + dump(ex);
  } catch (const sluice::Error&) {
    out += " SQ err\n";
  }
  return out;
}

}  // namespace

TEST_CASE("example decoder: every input decodes as libprotobuf-lite decoded it", "[example]") {
  std::ifstream in(std::string(SLUICE_IO_TEST_DATA) + "/example_oracle/protobuf_decoded.txt");
  REQUIRE(in);
  std::vector<std::pair<std::string, std::string>> cases;  // input hex, expected dump
  std::string line;
  while (std::getline(in, line)) {
    if (line.starts_with("#")) continue;
    if (line.starts_with("== ")) cases.emplace_back(line.substr(3), "");
    else if (!cases.empty()) cases.back().second += line + "\n";
  }
  REQUIRE(cases.size() == 299);
  std::size_t parsed = 0, refused = 0;
  for (const auto& [hex, want] : cases) {
    INFO("input " << hex);
    const std::string got = decode_both(from_hex(hex));
    CHECK(got == want);
    (got.starts_with(" EX ok") ? parsed : refused)++;
  }
  CHECK(parsed > 100);   // both sides of the oracle are exercised
  CHECK(refused > 100);
}

TEST_CASE("example decoder: packed and unpacked lists mix, and a map entry may hold its value before its key", "[example]") {
  // features { n: int64_list 1 (unpacked), [2, -1] (packed, -1 in 10 bytes),
  // 300 (unpacked); f (value first): float_list 1.5 (unpacked), [2, -0.5];
  // b: bytes_list "x", "" }
  const auto bytes = from_hex(
      "0a410a190a016e12141a1208010a0b02ffffffffffffffffff0108ac020a161211120f0d0000c03f0a0800000040000000bf0a01660a0c"
      "0a016212070a050a01780a00");
  Example ex;
  ex.parse(bytes);
  const auto n = ex.int64s("n");
  CHECK(std::vector<std::int64_t>(n.begin(), n.end()) == std::vector<std::int64_t>{1, 2, -1, 300});
  const auto f = ex.floats("f");
  CHECK(std::vector<float>(f.begin(), f.end()) == std::vector<float>{1.5f, 2.0f, -0.5f});
  CHECK(ex.bytes("b") == std::vector<std::string_view>{"x", ""});
}

TEST_CASE("example decoder: unknown fields of every wire type are skipped at every level", "[example]") {
  // varint 5, fixed64 6, bytes 9, a group 7 holding a varint and an empty
  // group 2, fixed32 8: before and after each message's own fields.
  const auto bytes = from_hex(
      "28073101010101010101014a027a7a3b080113143c45020202020a8f0128073101010101010101014a027a7a3b080113143c4502020202"
      "0a590a016e28073101010101010101014a027a7a3b080113143c4502020202123a1a1e0a02040528073101010101010101014a027a7a3b"
      "080113143c450202020228073101010101010101014a027a7a3b080113143c450202020228073101010101010101014a027a7a3b080113"
      "143c450202020228073101010101010101014a027a7a3b080113143c4502020202");
  Example ex;
  ex.parse(bytes);
  REQUIRE(ex.features().size() == 1);
  const auto n = ex.int64s("n");
  CHECK(std::vector<std::int64_t>(n.begin(), n.end()) == std::vector<std::int64_t>{4, 5});
}

TEST_CASE("example decoder: repeated fields merge, a duplicate key keeps its last entry", "[example]") {
  // features twice: {a: int64 [1], b: float [1]} then {a: bytes ["z"],
  // k: int64 [1], k: int64 [2], m: value int64 [1] and value int64 [2] in one
  // entry, s: int64 [1] then float [2] in one Feature, an entry with no key}.
  const auto bytes = from_hex(
      "0a1b0a0a0a016112051a030a01010a0d0a0162120812060a040000803f0a540a0a0a016112050a030a017a0a0a0a016b12051a030a01"
      "010a0a0a016b12051a030a01020a110a016d12051a030a010112051a030a01020a120a0173120d1a030a010112060a04000000400a0712"
      "051a030a0109");
  Example ex;
  ex.parse(bytes);
  CHECK(ex.kind("a") == FeatureKind::bytes_list);  // the later Features' entry replaced the first
  CHECK(ex.bytes_at("a", 0) == "z");
  CHECK(ex.floats("b")[0] == 1.0f);                // the first Features' other entries stay
  CHECK(ex.int64s("k").size() == 1);
  CHECK(ex.int64s("k")[0] == 2);                   // last wins
  const auto m = ex.int64s("m");
  CHECK(std::vector<std::int64_t>(m.begin(), m.end()) == std::vector<std::int64_t>{1, 2});  // merged
  CHECK(ex.kind("s") == FeatureKind::float_list);  // oneof: the later member replaces
  CHECK(ex.floats("s")[0] == 2.0f);
  CHECK(ex.int64s("")[0] == 9);                    // no key: the empty name
  CHECK(ex.features().size() == 6);
}

TEST_CASE("example decoder: views outlive the bytes they were parsed from", "[example]") {
  auto bytes = from_hex("0a0c0a0a0a016212050a030a0178");  // b: bytes_list "x"
  Example ex;
  ex.parse(bytes);
  std::fill(bytes.begin(), bytes.end(), std::byte{0});
  CHECK(ex.bytes_at("b", 0) == "x");
  CHECK(ex.features()[0].name == "b");
}

TEST_CASE("example decoder: a SequenceExample is refused by parse() even after an unknown group", "[example]") {
  // group 7 {}, then feature_lists (field 2) { l: [ Feature { int64 [1] } ] }
  const auto bytes = from_hex("3b3c120e0a0c0a016c12070a051a030a0101");
  Example ex;
  CHECK_THROWS_WITH(ex.parse(bytes), Contains("a tf.train.SequenceExample, not a tf.train.Example") && Contains("l"));
  ex.parse_sequence(bytes);
  CHECK(ex.steps("l") == 1);
  CHECK(ex.int64s("l", 0)[0] == 1);
}

TEST_CASE("example decoder: malformed input is an error naming what and where", "[example]") {
  Example ex;
  auto refuses = [&](const std::string& hex, const char* why) {
    INFO(hex);
    CHECK_THROWS_WITH(ex.parse(from_hex(hex)),
                      Contains("malformed tf.train.Example (") && Contains(why) && Contains(" at byte "));
  };
  // Truncation, lengths past their end (the record's or a parent message's).
  refuses("0a", "truncated varint in Features at byte 1");
  refuses("0a0580", "Features says 5 bytes but 1 remain at byte 1");
  refuses("0a02ffff", "truncated varint in a field tag at byte 2");
  refuses("0a070a050a01781204", "a Feature says 4 bytes but 0 remain at byte 8");
  refuses("0a0c0a0a0a017812051a030a0180", "truncated varint in a packed int64_list at byte 13");
  refuses("0a0a0a080a017812031a0108", "truncated varint in an int64_list value");
  refuses("0a0b0a090a0178120412020d00", "truncated 32-bit value in a float_list value at byte 12");
  refuses("0a0e0a0c0a0178120712050a03000000", "a packed float_list of 3 bytes, not a multiple of 4");
  refuses("3b08", "truncated varint in an unknown field");
  // Over-long varint: 11 bytes.
  refuses("0a150a130a0178120e1a0c08ffffffffffffffffffff7f", "varint longer than 10 bytes in an int64_list value");
  // Wrong wire types for known fields, and wire types that do not exist.
  refuses("0801", "features (field 1) has wire type varint, not length-delimited at byte 0");
  refuses("0a020801", "Features.feature (field 1) has wire type varint");
  refuses("0a090a070a017812021801", "int64_list (field 3) has wire type varint");
  refuses("0a0e0a0c0a017812070a050d00000000", "BytesList.value (field 1) has wire type 32-bit");
  refuses("0e", "wire type 6 does not exist");
  refuses("0f", "wire type 7 does not exist");
  refuses("00", "field number 0");
  // Groups: a stray end, one not closed, one closed by another's end, too deep.
  refuses("0c", "group end (field 1) with no group open");
  refuses("3b", "group (field 7) not closed");
  refuses("3b44", "group end (field 8) does not close the open group");
  refuses([] { std::string h; for (int i = 0; i < 101; ++i) h += "3b"; return h; }(), "groups nested over 100 deep");
  // Map keys are proto3 strings.
  refuses("0a070a050a03ff6162", "a map key is not UTF-8");
  CHECK_THROWS_WITH(ex.parse_sequence(from_hex("0a0580")), Contains("malformed tf.train.SequenceExample (3 bytes)"));
  // After an error the Example is usable again.
  ex.parse(from_hex("0a0c0a0a0a016212050a030a0178"));
  CHECK(ex.bytes_at("b", 0) == "x");
}
