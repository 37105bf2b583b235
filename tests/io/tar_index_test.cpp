// The tar index (sluice/io/tar_index.h): a scan written and read back is the
// same index, agrees with Python's tarfile on every member's data offset and
// size, and gives a TarSource that reads what the scanning one reads; every
// truncation and each kind of garbage is an error naming the file.
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

#include "io_test_support.h"
#include "sluice/error.h"
#include "sluice/io/tar.h"
#include "sluice/io/tar_index.h"

using namespace sluice::io;
using Catch::Matchers::Contains;

namespace {

const char* const kShards[] = {"webdataset/pytorch-data/wds.tar", "webdataset/pytorch-data/csv.tar",
                               "webdataset/webdataset-testdata/tendata.tar",
                               "webdataset/webdataset-testdata/mpdata.tar"};

void check_same(const TarIndex& a, const TarIndex& b) {
  CHECK(a.shard_bytes == b.shard_bytes);
  REQUIRE(a.samples.size() == b.samples.size());
  for (std::size_t i = 0; i < a.samples.size(); ++i) {
    INFO("sample " << i);
    CHECK(a.samples[i].key == b.samples[i].key);
    REQUIRE(a.samples[i].members.size() == b.samples[i].members.size());
    for (std::size_t j = 0; j < a.samples[i].members.size(); ++j) {
      CHECK(a.samples[i].members[j].field == b.samples[i].members[j].field);
      CHECK(a.samples[i].members[j].offset == b.samples[i].members[j].offset);
      CHECK(a.samples[i].members[j].size == b.samples[i].members[j].size);
    }
  }
}

std::string text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

TEST_CASE("tar index: written and read back, it is the scan, and a TarSource from it reads what the scanning one reads", "[tar]") {
  SLUICE_REQUIRE_SHARED_DATA(data);
  test::TempDir tmp;
  for (const char* name : kShards) {
    const std::string shard = (data / name).string();
    INFO(shard);
    const TarIndex scanned = scan_tar(shard);
    REQUIRE(!scanned.samples.empty());
    const std::string idx = tmp.file("shard.tar.idx");
    write_tar_index(idx, scanned);
    TarIndex read = read_tar_index(idx);
    check_same(scanned, read);
    CHECK(tar_index_path(shard) == shard + ".idx");

    const TarSource scanning({shard});
    const TarSource indexed({shard}, {std::move(read)}, {});
    REQUIRE(indexed.size() == scanning.size());
    std::vector<std::byte> a_buf, b_buf;
    Sample a, b;
    for (std::uint64_t id = 0; id < scanning.size(); ++id) {
      CHECK(indexed.locate(id).offset == scanning.locate(id).offset);
      CHECK(indexed.locate(id).length == scanning.locate(id).length);
      read_sample(scanning, id, a_buf, a);
      read_sample(indexed, id, b_buf, b);
      CHECK(a.key == b.key);
      CHECK(a.record == b.record);
      REQUIRE(a.fields.size() == b.fields.size());
      for (std::size_t f = 0; f < a.fields.size(); ++f) {
        CHECK(a.fields[f].name == b.fields[f].name);
        CHECK(test::text_of(a.fields[f].bytes) == test::text_of(b.fields[f].bytes));
      }
    }
  }
  CHECK_THROWS_WITH(TarSource({"a.tar", "b.tar"}, {TarIndex{}}, {}), Contains("2 shards but 1 indexes"));
}

TEST_CASE("tar index: every member's data offset and size agree with Python's tarfile", "[tar]") {
  SLUICE_REQUIRE_SHARED_DATA(data);
  test::TempDir tmp;
  for (const char* name : kShards) {
    const std::string shard = (data / name).string();
    INFO(shard);
    // The oracle: tarfile's offset_data and size of each regular member, in order.
    const std::string script = "import tarfile\n"
                               "with tarfile.open('" + shard + "') as t, open('oracle.txt', 'w') as out:\n"
                               "    for m in t.getmembers():\n"
                               "        if m.isfile(): out.write('%s %d %d\\n' % (m.name, m.offset_data, m.size))\n";
    if (!test::run_numpy(script, tmp.path())) return;
    std::istringstream oracle(text_file(tmp.file("oracle.txt")));
    std::size_t members = 0;
    for (const TarIndexSample& s : scan_tar(shard).samples)
      for (const TarIndexMember& m : s.members) {
        std::string path;
        std::uint64_t offset = 0, size = 0;
        REQUIRE(oracle >> path >> offset >> size);
        CHECK(path == (m.field.empty() ? s.key : s.key + "." + m.field));
        CHECK(offset == m.offset);
        CHECK(size == m.size);
        ++members;
      }
    std::string extra;
    CHECK_FALSE(oracle >> extra);
    CHECK(members > 0);
  }
}

TEST_CASE("tar index: every truncation of an index is an error naming it, never a shorter index", "[tar]") {
  SLUICE_REQUIRE_SHARED_DATA(data);
  TarIndex index = scan_tar((data / kShards[0]).string());
  index.samples[1].key = "a key\nwith a newline and spaces";  // length-prefixed: any byte but NUL
  test::TempDir tmp;
  const std::string idx = tmp.file("x.tar.idx");
  write_tar_index(idx, index);
  const std::string whole = text_file(idx);
  check_same(parse_tar_index(whole, idx), index);
  for (std::size_t n = 0; n < whole.size(); ++n) {
    INFO("the first " << n << " bytes");
    CHECK_THROWS_WITH(parse_tar_index(whole.substr(0, n), idx), Contains(idx + ": not a valid tar index at byte"));
  }
  const std::string cut = tmp.file("cut.tar.idx");
  test::write_file(cut, test::bytes_of(whole.substr(0, whole.size() / 2)));
  CHECK_THROWS_WITH(read_tar_index(cut), Contains(cut) && Contains("truncated"));
  CHECK_THROWS_WITH(read_tar_index(tmp.file("none.idx")), Contains("cannot open tar index " + tmp.file("none.idx")));
}

TEST_CASE("tar index: garbage is an error saying what is wrong, never an offset outside the shard", "[tar]") {
  const std::string head = "sluice tar index 1\nshard_bytes 4096\n";
  struct Case {
    std::string text, why;
  };
  const std::vector<Case> cases = {
      {"", "no \"sluice tar index\" line"},
      {"10 512\n20 512\n", "no \"sluice tar index\" line"},  // a TFRecord index
      {"sluice tar index 2\n", "expected \"sluice tar index 1\\n\""},
      {head + "samples 1\ns 1:a 1\nm 1:x 1024 10\n", "the file ends early"},
      {head + "samples 1\ns 1:a 1\nm 1:x 3584 1024\nend\n", "lies past the shard's 4096 bytes"},
      {head + "samples 1\ns 1:a 1\nm 1:x 18446744073709551615 2\nend\n", "lies past the shard's 4096 bytes"},
      {head + "samples 1\ns 1:a 1\nm 1:x 99999999999999999999 2\nend\n", "a number too large"},
      {head + "samples 1\ns 1:a 1\nm 1:x 0 10\nend\n", "overlaps the one before it or the shard's first header"},
      {head + "samples 1\ns 1:a 2\nm 1:x 1024 10\nm 1:y 1030 10\nend\n", "overlaps the one before it"},
      {head + "samples 2\ns 1:a 1\nm 1:x 2048 10\ns 1:b 1\nm 1:x 1024 10\nend\n", "overlaps the one before it"},
      {head + "samples 1\ns 1:a 0\nend\n", "sample 0 has no member"},
      {head + "samples 99999999999\ns 1:a 1\nm 1:x 1024 10\nend\n", "more than the file can hold"},
      {head + "samples 1\ns 1:a 99999999\nm 1:x 1024 10\nend\n", "more than the file can hold"},
      {head + "samples 1\ns 9999:a 1\nm 1:x 1024 10\nend\n", "past the file's end"},
      {head + "samples 1\ns 1:a 1\nm 1:x -1 10\nend\n", "expected a number"},
      {head + "samples 1\ns 1:a 1\nm 1:x 1024 10\nend\nmore", "bytes after \"end\""},
      {head + "samples 0\nend\n\n", "bytes after \"end\""},
  };
  for (const Case& c : cases) {
    INFO(c.text);
    CHECK_THROWS_WITH(parse_tar_index(c.text, "bad.idx"), Contains("bad.idx: not a valid tar index") && Contains(c.why));
  }
  // The smallest valid ones.
  CHECK(parse_tar_index(head + "samples 0\nend\n", "ok.idx").samples.empty());
  const TarIndex one = parse_tar_index(head + "samples 1\ns 0: 1\nm 0: 512 3584\nend\n", "ok.idx");
  REQUIRE(one.samples.size() == 1);
  CHECK(one.samples[0].members[0].offset + one.samples[0].members[0].size == 4096);
}
