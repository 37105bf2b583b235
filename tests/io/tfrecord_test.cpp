#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <set>
#include <thread>

#include "io_test_support.h"
#include "sluice/error.h"
#include "sluice/io/tfrecord.h"
#include "sluice/io/tfrecord_stream.h"
#include "sluice/io/tfrecord_writer.h"

using namespace sluice::io;
namespace fs = std::filesystem;
using Catch::Matchers::Contains;

namespace {

// Every shard in the shared data, with its record count from tfrecord/INDEX.txt.
std::vector<std::pair<std::string, std::uint64_t>> shared_shards(const fs::path& data) {
  const fs::path t = data / "tfrecord";
  return {
      {(t / "magenta/notesequences.tfrecord").string(), 46},
      {(t / "magenta/tfrecord_iterator_test.tfrecord").string(), 3},
      {(t / "pytorch-data/example.tfrecord").string(), 4},
      {(t / "pytorch-data/sequence_example.tfrecord").string(), 4},
      {(t / "tensorflow-ranking/eval_elwc.tfrecord").string(), 10},
      {(t / "tensorflow-ranking/test_numerical_elwc.tfrecord").string(), 9},
      {(t / "tensorflow-ranking/tfrbert_elwc_test.tfrecord").string(), 30},
      {(t / "tensorflow-ranking/tfrbert_elwc_train.tfrecord").string(), 30},
      {(t / "tensorflow-ranking/train_elwc.tfrecord").string(), 10},
      {(t / "tensorflow-ranking/train_numerical_elwc.tfrecord").string(), 27},
      {(t / "tensorflow-ranking/vali_numerical_elwc.tfrecord").string(), 9},
  };
}

// A shard of `n` records "record-<i>" written by the test.
std::string write_shard(const test::TempDir& dir, const std::string& name, int n, int first = 0) {
  TFRecordWriter w(dir.file(name));
  for (int i = first; i < first + n; ++i) w.write(test::bytes_of("record-" + std::to_string(i)));
  w.close();
  return dir.file(name);
}

}  // namespace

TEST_CASE("tfrecord: TensorFlow-written shards index with the documented record counts", "[tfrecord]") {
  SLUICE_REQUIRE_SHARED_DATA(data);
  test::TempDir tmp;
  std::vector<std::string> paths;
  std::uint64_t total = 0;
  for (auto& [path, count] : shared_shards(data)) {
    INFO(path);
    CHECK(scan_tfrecord(path).records() == count);
    paths.push_back(path);
    total += count;
  }
  TFRecordOptions options;
  options.index_dir = tmp.path().string();  // the shared folder is read-only
  TFRecordSource source(paths, options);
  CHECK(source.size() == total);
  CHECK(source.size() == 182);
  // Every record reads back with both CRCs checked.
  std::vector<std::byte> buf;
  Sample s;
  for (std::uint64_t i = 0; i < source.size(); ++i) read_sample(source, i, buf, s);
  // The sidecars were written to index_dir and are loaded next time.
  for (const std::string& p : paths) CHECK(fs::exists(tfrecord_index_path(p, tmp.path().string())));
  TFRecordSource again(paths, options);
  CHECK(again.size() == total);
}

TEST_CASE("tfrecord: magenta's raw records read back by index", "[tfrecord]") {
  SLUICE_REQUIRE_SHARED_DATA(data);
  test::TempDir tmp;
  TFRecordOptions options;
  options.index_dir = tmp.path().string();
  auto path = (data / "tfrecord/magenta/tfrecord_iterator_test.tfrecord").string();
  TFRecordSource source({path}, options);
  REQUIRE(source.size() == 3);
  std::vector<std::byte> buf;
  Sample s;
  const char* expected[] = {"hello world", "12345", "success"};
  std::uint64_t offset = 0;
  for (std::uint64_t i = 0; i < 3; ++i) {
    read_sample(source, i, buf, s);
    CHECK(test::text_of(s.fields.at(0).bytes) == expected[i]);
    CHECK(s.record == i);
    CHECK(s.offset == offset);
    CHECK(s.path == path);
    offset += 16 + std::string(expected[i]).size();
  }
}

TEST_CASE("tfrecord: the sidecar index is the offset-size text format and is rebuilt when stale",
          "[tfrecord]") {
  test::TempDir tmp;
  std::string shard = write_shard(tmp, "a.tfrecord", 5);
  { TFRecordSource source({shard}); }
  const std::string idx = shard + ".idx";
  REQUIRE(fs::exists(idx));
  auto text = test::text_of(test::read_file(idx));
  CHECK(text.rfind("0 24\n24 24\n", 0) == 0);  // "record-0": 8 bytes + 16 of framing
  // Append records: the shard is newer and longer, so the sidecar is stale.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  write_shard(tmp, "a.tfrecord", 7);
  CHECK_FALSE(load_tfrecord_index(idx, shard).has_value());
  TFRecordSource source({shard});
  CHECK(source.size() == 7);
  REQUIRE(load_tfrecord_index(idx, shard).has_value());
  CHECK(load_tfrecord_index(idx, shard)->records() == 7);
}

TEST_CASE("tfrecord: global ids run across shards in order", "[tfrecord]") {
  test::TempDir tmp;
  auto a = write_shard(tmp, "a.tfrecord", 3, 0);
  auto b = write_shard(tmp, "b.tfrecord", 0, 0);
  auto c = write_shard(tmp, "c.tfrecord", 4, 3);
  TFRecordSource source({a, b, c});
  REQUIRE(source.size() == 7);
  std::vector<std::byte> buf;
  Sample s;
  for (std::uint64_t i = 0; i < 7; ++i) {
    read_sample(source, i, buf, s);
    CHECK(test::text_of(s.fields[0].bytes) == "record-" + std::to_string(i));
  }
  read_sample(source, 4, buf, s);
  CHECK(s.path == c);
  CHECK(s.record == 1);
  CHECK_THROWS_WITH(read_sample(source, 7, buf, s), Contains("out of range"));
}

TEST_CASE("tfrecord: a corrupt data byte is a CRC error naming file, record and offset", "[tfrecord]") {
  test::TempDir tmp;
  auto shard = write_shard(tmp, "a.tfrecord", 4);
  auto bytes = test::read_file(shard);
  bytes[2 * 24 + 12 + 3] ^= std::byte{0x40};  // record 2's data
  test::write_file(shard, bytes);
  TFRecordOptions options;
  options.write_index = false;
  TFRecordSource source({shard}, options);  // headers are intact
  REQUIRE(source.size() == 4);
  std::vector<std::byte> buf;
  Sample s;
  CHECK_THROWS_WITH(read_sample(source, 2, buf, s),
                    Contains(shard) && Contains("record 2 at byte offset 48") &&
                        Contains("data CRC mismatch"));
  CHECK_NOTHROW(read_sample(source, 3, buf, s));

  SECTION("the stream fails on it, or skips it and goes on") {
    TFRecordStream fail({shard});
    Sample out;
    CHECK(fail.next(out));
    CHECK(fail.next(out));
    CHECK_THROWS_WITH(fail.next(out), Contains("record 2 at byte offset 48"));

    StreamOptions so;
    so.on_error = sluice::OnError::skip;
    TFRecordStream skip({shard}, so);
    std::vector<std::string> got;
    while (skip.next(out)) got.push_back(test::text_of(out.fields[0].bytes));
    CHECK(got == std::vector<std::string>{"record-0", "record-1", "record-3"});
    REQUIRE(skip.skips().count() == 1);
    CHECK(skip.skips().entries()[0].id == 2);
    CHECK_THAT(skip.skips().report(), Contains("skipped 1 sample: ids 2"));
  }
}

TEST_CASE("tfrecord: a truncated shard fails indexing, or is indexed up to the cut", "[tfrecord]") {
  SLUICE_REQUIRE_SHARED_DATA(data);
  test::TempDir tmp;
  auto bytes = test::read_file((data / "tfrecord/pytorch-data/example.tfrecord").string());
  REQUIRE(bytes.size() == 523);
  bytes.resize(bytes.size() - 30);  // cuts into the last record
  auto shard = tmp.file("cut.tfrecord");
  test::write_file(shard, bytes);
  CHECK_THROWS_WITH(TFRecordSource({shard}),
                    Contains(shard) && Contains("record 3") && Contains("truncated record"));
  TFRecordOptions options;
  options.on_error = sluice::OnError::skip;
  TFRecordSource source({shard}, options);
  CHECK(source.size() == 3);
  CHECK(source.index_skips().count() == 1);
  CHECK_FALSE(fs::exists(shard + ".idx"));  // a damaged shard is not cached

  StreamOptions so;
  so.on_error = sluice::OnError::skip;
  TFRecordStream stream({shard}, so);
  Sample s;
  int n = 0;
  while (stream.next(s)) ++n;
  CHECK(n == 3);
  REQUIRE(stream.skips().count() == 1);
  CHECK_THAT(stream.skips().entries()[0].reason, Contains("record 3") && Contains("truncated"));
}

TEST_CASE("tfrecord: a corrupt length is caught by the length CRC", "[tfrecord]") {
  test::TempDir tmp;
  auto shard = write_shard(tmp, "a.tfrecord", 3);
  auto bytes = test::read_file(shard);
  bytes[24] = std::byte{0x7f};  // record 1's length
  test::write_file(shard, bytes);
  CHECK_THROWS_WITH(scan_tfrecord(shard),
                    Contains("record 1 at byte offset 24") && Contains("length CRC mismatch"));
  CHECK_THROWS_WITH(TFRecordSource({shard}), Contains("length CRC mismatch"));
}

TEST_CASE("tfrecord stream: an unchecked length past the end of the file is a truncation", "[tfrecord]") {
  test::TempDir tmp;
  auto shard = write_shard(tmp, "a.tfrecord", 3);
  auto bytes = test::read_file(shard);
  bytes[24 + 4] = std::byte{0x40};  // record 1's length becomes about 2^38 bytes
  test::write_file(shard, bytes);
  StreamOptions o;
  o.verify_crc = false;  // nothing stops the length before the stream sizes a read by it
  TFRecordStream stream({shard}, o);
  Sample s;
  REQUIRE(stream.next(s));
  CHECK_THROWS_WITH(stream.next(s), Contains("record 1 at byte offset 24") &&
                                        Contains("truncated record: length 274877906") &&
                                        Contains("the file ends"));
}

TEST_CASE("tfrecord: a missing shard is named", "[tfrecord]") {
  CHECK_THROWS_WITH(TFRecordSource({"/nonexistent/x.tfrecord"}),
                    Contains("cannot open /nonexistent/x.tfrecord"));
  TFRecordStream stream({"/nonexistent/x.tfrecord"});
  Sample s;
  CHECK_THROWS_WITH(stream.next(s), Contains("cannot open /nonexistent/x.tfrecord"));
}

TEST_CASE("tfrecord stream: file order, shuffle buffer and shard partition", "[tfrecord]") {
  test::TempDir tmp;
  std::vector<std::string> shards;
  for (int k = 0; k < 5; ++k) shards.push_back(write_shard(tmp, "s" + std::to_string(k), 20, 20 * k));
  auto read_all = [](TFRecordStream& st) {
    std::vector<std::string> out;
    Sample s;
    while (st.next(s)) out.push_back(test::text_of(s.fields[0].bytes));
    return out;
  };
  std::vector<std::string> expected;
  for (int i = 0; i < 100; ++i) expected.push_back("record-" + std::to_string(i));

  TFRecordStream plain(shards);
  CHECK(read_all(plain) == expected);

  StreamOptions so;
  so.shuffle_buffer = 16;
  so.shuffle_shards = true;
  so.seed = 42;
  TFRecordStream shuffled(shards, so);
  auto epoch0 = read_all(shuffled);
  CHECK(epoch0 != expected);
  auto sorted = epoch0;
  std::sort(sorted.begin(), sorted.end());
  auto sorted_expected = expected;
  std::sort(sorted_expected.begin(), sorted_expected.end());
  CHECK(sorted == sorted_expected);
  shuffled.reset(1);
  auto epoch1 = read_all(shuffled);
  CHECK(epoch1 != epoch0);
  shuffled.reset(0);
  CHECK(read_all(shuffled) == epoch0);  // deterministic per (seed, epoch)

  // Three workers: disjoint shards that together cover every record once.
  std::multiset<std::string> all;
  for (std::uint32_t w = 0; w < 3; ++w) {
    StreamOptions part = so;
    part.shard_index = w;
    part.shard_count = 3;
    TFRecordStream st(shards, part);
    for (auto& r : read_all(st)) all.insert(r);
  }
  CHECK(all == std::multiset<std::string>(expected.begin(), expected.end()));
}

TEST_CASE("tfrecord stream: records larger than the read buffer", "[tfrecord]") {
  test::TempDir tmp;
  TFRecordWriter w(tmp.file("big.tfrecord"));
  std::vector<std::byte> big(700 * 1024);
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = std::byte(i * 31);
  w.write(test::bytes_of("small"));
  w.write(big);
  w.write(test::bytes_of("tail"));
  w.close();
  TFRecordStream st({tmp.file("big.tfrecord")});
  Sample s;
  REQUIRE(st.next(s));
  CHECK(test::text_of(s.fields[0].bytes) == "small");
  REQUIRE(st.next(s));
  CHECK(std::equal(big.begin(), big.end(), s.fields[0].bytes.begin(), s.fields[0].bytes.end()));
  CHECK(s.offset == 21);
  REQUIRE(st.next(s));
  CHECK(test::text_of(s.fields[0].bytes) == "tail");
  CHECK_FALSE(st.next(s));
}

TEST_CASE("tfrecord stream: large records are CRC-checked, truncated and skipped by offset", "[tfrecord]") {
  test::TempDir tmp;
  const std::string path = tmp.file("large.tfrecord");
  std::vector<std::vector<std::byte>> records;
  for (std::size_t size : {100 * 1024, 300 * 1024, 5, 1024 * 1024 + 3, 65 * 1024}) {
    std::vector<std::byte> r(size);
    for (std::size_t i = 0; i < size; ++i) r[i] = std::byte(i * 7 + size);
    records.push_back(std::move(r));
  }
  {
    TFRecordWriter w(path);
    for (auto& r : records) w.write(r);
    w.close();
  }
  std::vector<std::uint64_t> offsets;
  std::uint64_t at = 0;
  for (auto& r : records) {
    offsets.push_back(at);
    at += r.size() + 16;
  }

  SECTION("every record comes back whole, twice across epochs") {
    TFRecordStream st({path});
    for (int epoch = 0; epoch < 2; ++epoch) {
      st.reset(static_cast<std::uint64_t>(epoch));
      Sample s;
      for (std::size_t k = 0; k < records.size(); ++k) {
        REQUIRE(st.next(s));
        CHECK(s.offset == offsets[k]);
        CHECK(std::equal(records[k].begin(), records[k].end(), s.fields[0].bytes.begin(),
                         s.fields[0].bytes.end()));
      }
      CHECK_FALSE(st.next(s));
    }
  }
  SECTION("a corrupt byte deep in a large record is a data CRC error; skip goes on") {
    auto bytes = test::read_file(path);
    bytes[offsets[1] + 12 + 280 * 1024] ^= std::byte{4};
    test::write_file(path, bytes);
    TFRecordStream fail({path});
    Sample s;
    REQUIRE(fail.next(s));
    CHECK_THROWS_WITH(fail.next(s), Contains(path) && Contains("record 1 at byte offset " +
                                                               std::to_string(offsets[1])) &&
                                        Contains("data CRC mismatch"));
    StreamOptions o;
    o.on_error = sluice::OnError::skip;
    TFRecordStream skip({path}, o);
    std::size_t good = 0;
    while (skip.next(s)) ++good;
    CHECK(good == records.size() - 1);
    REQUIRE(skip.skips().count() == 1);
    CHECK_THAT(skip.skips().entries()[0].reason, Contains("data CRC mismatch"));
  }
  SECTION("a large record cut short is truncated, naming its offset") {
    auto bytes = test::read_file(path);
    bytes.resize(offsets[3] + 12 + 500 * 1024);
    test::write_file(path, bytes);
    StreamOptions o;
    o.on_error = sluice::OnError::skip;
    TFRecordStream skip({path}, o);
    Sample s;
    std::size_t good = 0;
    while (skip.next(s)) ++good;
    CHECK(good == 3);
    REQUIRE(skip.skips().count() == 1);
    CHECK_THAT(skip.skips().entries()[0].reason,
               Contains("record 3 at byte offset " + std::to_string(offsets[3])) &&
                   Contains("truncated record") && Contains(std::to_string(500 * 1024) + " bytes after"));
  }
}

TEST_CASE("tfrecord: a source built from given indexes touches no shard until a record is read", "[tfrecord]") {
  test::TempDir tmp;
  const std::string a = write_shard(tmp, "a.tfrecord", 3, 0), b = write_shard(tmp, "b.tfrecord", 4, 3);
  write_tfrecord_index(a + ".idx", scan_tfrecord(a));
  write_tfrecord_index(b + ".idx", scan_tfrecord(b));
  // The sidecar alone gives the index, its last offset the shard's size.
  const std::optional<TFRecordIndex> ia = read_tfrecord_index(a + ".idx"), ib = read_tfrecord_index(b + ".idx");
  REQUIRE(ia);
  REQUIRE(ib);
  CHECK(ia->offsets == scan_tfrecord(a).offsets);
  CHECK(ib->offsets.back() == fs::file_size(b));
  CHECK_FALSE(read_tfrecord_index(tmp.file("absent.idx")));
  test::write_file(tmp.file("bad.idx"), test::bytes_of("0 24\n30 24\n"));  // offsets that do not follow
  CHECK_FALSE(read_tfrecord_index(tmp.file("bad.idx")));

  const std::string later = tmp.file("later.tfrecord");  // not there yet (a remote shard)
  TFRecordSource source({a, later}, {*ia, *ib}, {});
  CHECK(source.size() == 7);
  CHECK_FALSE(fs::exists(later + ".idx"));
  CHECK(source.locate(4).file == 1);
  std::vector<std::byte> buf;
  Sample s;
  read_sample(source, 1, buf, s);
  CHECK(test::text_of(s.fields[0].bytes) == "record-1");
  CHECK_THROWS(read_sample(source, 4, buf, s));  // its shard is missing
  fs::copy_file(b, later);
  read_sample(source, 4, buf, s);
  CHECK(test::text_of(s.fields[0].bytes) == "record-4");
  CHECK_THROWS_WITH(TFRecordSource({a}, {}, {}), Contains("1 shards but 0 indexes"));
}
