#include <catch2/catch.hpp>
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <span>

#include "io_test_support.h"
#include "skip.h"
#include "sluice/error.h"
#include "sluice/io/tar.h"
#include "sluice/io/tar_stream.h"
#include "sluice/io/tar_writer.h"

using namespace sluice::io;
using Catch::Matchers::Contains;

namespace {

// What a stream gave, copied out of its views (which the next sample reuses).
struct Got {
  std::string key;
  std::vector<std::string> fields;  // names, in member order
};

std::vector<Got> stream_all(TarStream& st, std::vector<std::vector<std::string>>* texts = nullptr) {
  std::vector<Got> out;
  Sample s;
  while (st.next(s)) {
    Got g{std::string(s.key), {}};
    std::vector<std::string> t;
    for (auto& f : s.fields) {
      g.fields.emplace_back(f.name);
      t.push_back(std::string(f.name) + "=" + test::text_of(f.bytes));
    }
    if (texts) texts->push_back(t);
    out.push_back(g);
  }
  return out;
}

}  // namespace

TEST_CASE("tar: wds.tar groups data/N.txt and data/N.bin into 10 samples", "[tar]") {
  SLUICE_REQUIRE_SHARED_DATA(data);
  auto path = (data / "webdataset/pytorch-data/wds.tar").string();
  TarSource source({path});
  REQUIRE(source.size() == 10);
  std::vector<std::byte> buf;
  Sample s;
  for (std::uint64_t i = 0; i < 10; ++i) {
    read_sample(source, i, buf, s);
    CHECK(s.key == "data/" + std::to_string(i));
    REQUIRE(s.fields.size() == 2);
    CHECK(s.fields[0].name == "txt");
    CHECK(test::text_of(s.fields[0].bytes) == "text" + std::to_string(i));
    CHECK(s.fields[1].name == "bin");
    CHECK(test::text_of(s.fields[1].bytes) == "bin" + std::to_string(i));
    CHECK(s.record == i);
  }
  // The same through the streaming reader.
  TarStream st({path});
  std::vector<std::vector<std::string>> texts;
  auto all = stream_all(st, &texts);
  REQUIRE(all.size() == 10);
  CHECK(texts[3] == std::vector<std::string>{"txt=text3", "bin=bin3"});
}

TEST_CASE("tar: the webdataset test shards have the documented samples", "[tar]") {
  SLUICE_REQUIRE_SHARED_DATA(data);
  const auto dir = data / "webdataset";
  struct Case { const char* file; std::uint64_t samples; std::size_t fields; const char* first_field; };
  for (const Case& c : {Case{"pytorch-data/csv.tar", 3, 1, "csv"},
                        Case{"webdataset-testdata/compressed.tar", 3, 1, "txt.gz"},
                        Case{"webdataset-testdata/mpdata.tar", 100, 1, "mp"},
                        Case{"webdataset-testdata/tendata.tar", 100, 1, "ten"},
                        Case{"webdataset-testdata/testgz.tar", 1000, 1, "txt.gz"}}) {
    INFO(c.file);
    TarSource source({(dir / c.file).string()});
    CHECK(source.size() == c.samples);
    std::vector<std::byte> buf;
    Sample s;
    read_sample(source, source.size() - 1, buf, s);
    CHECK(s.fields.size() == c.fields);
    CHECK(s.fields[0].name == c.first_field);
    TarStream st({(dir / c.file).string()});
    CHECK(stream_all(st).size() == c.samples);
  }
  TarSource ten({(dir / "webdataset-testdata/tendata.tar").string()});
  std::vector<std::byte> buf;
  Sample s;
  read_sample(ten, 42, buf, s);
  CHECK(s.key == "000042");
  CHECK(s.fields[0].bytes.size() == 12736);
}

TEST_CASE("tar: gzip-compressed shards stream, and are refused for random access", "[tar]") {
  SLUICE_REQUIRE_SHARED_DATA(data);
  auto path = (data / "webdataset/webdataset-testdata/sample.tgz").string();
  CHECK_THROWS_WITH(TarSource({path}), Contains(path) && Contains("gzip") && Contains("TarStream"));
  TarStream st({path});
  std::vector<std::vector<std::string>> texts;
  auto all = stream_all(st, &texts);
  REQUIRE(all.size() == 90);
  for (const Got& g : all) CHECK(g.fields == std::vector<std::string>{"cls", "png"});
  CHECK(all[0].key == "10");
  CHECK(texts[0][0] == "cls=0");
  // PNG signature in the png field.
  CHECK(texts[0][1].rfind("png=\x89PNG", 0) == 0);

  StreamOptions so;
  so.shuffle_buffer = 10;
  so.seed = 3;
  TarStream shuffled({path}, so);
  auto mixed = stream_all(shuffled);
  REQUIRE(mixed.size() == 90);
  std::vector<std::string> plain_keys, mixed_keys;
  for (auto& g : all) plain_keys.push_back(g.key);
  for (auto& g : mixed) mixed_keys.push_back(g.key);
  CHECK(mixed_keys != plain_keys);
  std::sort(plain_keys.begin(), plain_keys.end());
  std::sort(mixed_keys.begin(), mixed_keys.end());
  CHECK(mixed_keys == plain_keys);
}

TEST_CASE("tar: a damaged gzip shard names the gzip failure, its offset and the file", "[tar]") {
  SLUICE_REQUIRE_SHARED_DATA(data);
  test::TempDir tmp;
  const auto good = test::read_file((data / "webdataset/webdataset-testdata/sample.tgz").string());
  REQUIRE(good.size() > 4096);
  const std::string path = tmp.file("damaged.tgz");
  // Flipped bytes across the deflate stream (past the 10-byte gzip header,
  // before the 8-byte trailer): every one is an error naming the file; zlib's
  // own check (or the trailer's CRC-32) finds them, not the tar reader.
  std::size_t gzip_named = 0, flips = 0;
  for (std::size_t at = 64; at + 8 < good.size(); at += good.size() / 23, ++flips) {
    auto bad = good;
    bad[at] ^= std::byte{0x5a};
    test::write_file(path, bad);
    INFO("flipped byte " << at);
    TarStream st({path});
    try {
      stream_all(st);
      FAIL("no error");
    } catch (const sluice::Error& e) {
      const std::string what = e.what();
      CHECK_THAT(what, Contains(path));
      if (what.find("gzip data corrupt at compressed byte offset") != std::string::npos &&
          what.find("zlib: ") != std::string::npos)
        ++gzip_named;
    }
  }
  CHECK(gzip_named >= flips - 2);  // a flip may still inflate to a tar header that fails its checksum first

  // Truncated: the stream ends inside the deflate data.
  auto cut = good;
  cut.resize(good.size() / 2);
  test::write_file(path, cut);
  TarStream truncated({path});
  CHECK_THROWS_WITH(stream_all(truncated), Contains(path) && Contains("gzip stream truncated at compressed byte offset") &&
                                               Contains("unexpected end of file"));
  // Only the trailer cut off: every member inflated, yet the stream is incomplete.
  cut = good;
  cut.resize(good.size() - 4);
  test::write_file(path, cut);
  TarStream no_trailer({path});
  CHECK_THROWS_WITH(stream_all(no_trailer), Contains(path) && Contains("gzip stream truncated"));

  // A plain tar named .tgz.
  test::write_file(path, test::read_file((data / "webdataset/pytorch-data/wds.tar").string()));
  TarStream plain({path});
  CHECK_THROWS_WITH(stream_all(plain), Contains(path) && Contains("not a gzip file"));
}

TEST_CASE("tar: a corrupt header names the file and byte offset", "[tar]") {
  SLUICE_REQUIRE_SHARED_DATA(data);
  test::TempDir tmp;
  auto bytes = test::read_file((data / "webdataset/pytorch-data/wds.tar").string());
  // Members are 512 header + 512 data: the 5th header (data/2.txt) is at 4096.
  bytes[4096 + 5] ^= std::byte{0x20};
  auto path = tmp.file("bad.tar");
  test::write_file(path, bytes);
  CHECK_THROWS_WITH(TarSource({path}), Contains(path) && Contains("byte offset 4096") &&
                                           Contains("corrupt tar header"));
  TarOptions skip;
  skip.on_error = sluice::OnError::skip;
  TarSource cut({path}, skip);
  CHECK(cut.size() == 2);
  CHECK(cut.index_skips().count() == 1);

  TarStream st({path});
  Sample s;
  CHECK(st.next(s));
  CHECK_THROWS_WITH(stream_all(st), Contains("byte offset 4096") && Contains("corrupt tar header"));
  StreamOptions so;
  so.on_error = sluice::OnError::skip;
  TarStream skipping({path}, so);
  CHECK(stream_all(skipping).size() == 2);
  CHECK(skipping.skips().count() == 1);
}

TEST_CASE("tar: a truncated member is reported", "[tar]") {
  SLUICE_REQUIRE_SHARED_DATA(data);
  test::TempDir tmp;
  auto bytes = test::read_file((data / "webdataset/webdataset-testdata/tendata.tar").string());
  bytes.resize(512 + 12800 + 512 + 1000);  // inside the second member's data
  auto path = tmp.file("cut.tar");
  test::write_file(path, bytes);
  CHECK_THROWS_WITH(TarSource({path}), Contains(path) && Contains("truncated tar member 000001.ten"));
  TarStream st({path});
  Sample s;
  CHECK_THROWS_WITH(stream_all(st), Contains("truncated tar member 000001.ten"));
}

TEST_CASE("tar: an archive cut at a member boundary is reported, not taken for a whole one", "[tar]") {
  SLUICE_REQUIRE_SHARED_DATA(data);
  test::TempDir tmp;
  auto bytes = test::read_file((data / "webdataset/webdataset-testdata/tendata.tar").string());
  bytes.resize(512 + 12800);  // the first member whole, then nothing: no end-of-archive blocks
  auto path = tmp.file("cut.tar");
  test::write_file(path, bytes);
  CHECK_THROWS_WITH(TarSource({path}), Contains(path) && Contains("without its end-of-archive blocks"));
  TarStream st({path});
  CHECK_THROWS_WITH(stream_all(st), Contains(path) && Contains("without its end-of-archive blocks"));
}

TEST_CASE("tar: a member name twice in one sample is an error naming it, and skip keeps the samples before it", "[tar]") {
  test::TempDir tmp;
  const std::string path = tmp.file("dup.tar");
  {
    TarWriter tar(path);
    auto add = [&](const std::string& name, const std::string& text) {
      tar.add(name, std::as_bytes(std::span(text.data(), text.size())));
    };
    add("e0.cls", "0");
    add("e0.txt", "zero");
    tar.end_sample();
    add("e1.cls", "1");
    add("e1.cls", "7");  // WebDataset raises "duplicate file name" here too
    tar.end_sample();
    add("e2.cls", "2");
    tar.end_sample();
    tar.finish();
  }
  CHECK_THROWS_WITH(TarSource({path}), Contains(path) && Contains("tar member e1.cls is the second of that name in sample e1 (the first at byte 2048)"));
  const TarSource skipping({path}, TarOptions{.on_error = sluice::OnError::skip});
  CHECK(skipping.size() == 1);
  REQUIRE(skipping.index_skips().entries().size() == 1);
  CHECK(skipping.index_skips().entries()[0].id == 1);
  // Streamed (index = false, gzip shards), the same.
  TarStream st({path});
  CHECK_THROWS_WITH(stream_all(st), Contains(path) && Contains("tar member e1.cls is the second of that name in sample e1"));
  StreamOptions skip;
  skip.on_error = sluice::OnError::skip;
  TarStream skipping_stream({path}, skip);
  const std::vector<Got> got = stream_all(skipping_stream);
  REQUIRE(got.size() == 1);
  CHECK(got[0].key == "e0");
  REQUIRE(skipping_stream.skips().entries().size() == 1);
  CHECK(skipping_stream.skips().entries()[0].id == 1);
}

TEST_CASE("tar: hidden members (macOS's ._x.jpg, .DS_Store) are in no sample, as in WebDataset", "[tar]") {
  if (std::system("/usr/bin/python3 -c 'import tarfile' >/dev/null 2>&1") != 0) SKIP_TEST("no /usr/bin/python3");
  test::TempDir tmp;
  const std::string path = tmp.file("mac.tar");
  // As macOS's tar writes them: each file's AppleDouble "._NAME" before it.
  const std::string script = "import io, tarfile\n"
                             "with tarfile.open('" + path + "', 'w', format=tarfile.PAX_FORMAT) as t:\n"
                             "    for name, text in [('.DS_Store', 'ds'), ('d/._e0.cls', 'fork0'), ('d/e0.cls', '0'),\n"
                             "                       ('d/e0.txt', 'zero'), ('d/._e1.cls', 'fork1'), ('d/e1.cls', '1'),\n"
                             "                       ('d/.hidden.cls', 'h'), ('d/e1.txt', 'one')]:\n"
                             "        data = text.encode()\n"
                             "        info = tarfile.TarInfo(name)\n"
                             "        info.size = len(data)\n"
                             "        t.addfile(info, io.BytesIO(data))\n";
  REQUIRE(std::system(("/usr/bin/python3 -c \"" + script + "\"").c_str()) == 0);
  const TarSource source({path});
  REQUIRE(source.size() == 2);
  std::vector<std::byte> buf;
  Sample s;
  for (std::uint64_t i = 0; i < 2; ++i) {
    read_sample(source, i, buf, s);
    CHECK(s.key == "d/e" + std::to_string(i));
    REQUIRE(s.fields.size() == 2);
    CHECK(s.fields[0].name == "cls");
    CHECK(test::text_of(s.fields[0].bytes) == std::to_string(i));
    CHECK(s.fields[1].name == "txt");
  }
  TarStream st({path});
  std::vector<std::vector<std::string>> texts;
  const std::vector<Got> got = stream_all(st, &texts);
  REQUIRE(got.size() == 2);
  CHECK(got[0].key == "d/e0");
  CHECK(texts[0] == std::vector<std::string>{"cls=0", "txt=zero"});
  CHECK(got[1].key == "d/e1");
  CHECK(texts[1] == std::vector<std::string>{"cls=1", "txt=one"});
}
