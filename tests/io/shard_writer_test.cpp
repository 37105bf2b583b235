// TarWriter, the manifest and ShardWriter: shards that Python's tarfile (an
// independent reader) and Sluice's own readers read back exactly; the cut by
// samples and by bytes; resume keeping only whole shards; corruption caught
// by the checksum with the shard named.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "io_test_support.h"
#include "output_file.h"
#include "sample_encoding.h"
#include "sluice/error.h"
#include "sluice/io/example.h"
#include "sluice/io/manifest.h"
#include "sluice/io/record_source.h"
#include "sluice/io/sample.h"
#include "sluice/io/shard_writer.h"
#include "sluice/io/tar.h"
#include "sluice/io/tar_stream.h"
#include "sluice/io/tar_writer.h"
#include "sluice/io/tfrecord.h"
#include "sluice/io/tfrecord_stream.h"

using namespace sluice::io;
using sluice::io::test::bytes_of;
using sluice::io::test::read_file;
using sluice::io::test::run_numpy;
using sluice::io::test::TempDir;
using sluice::io::test::text_of;

namespace {

std::span<const std::byte> view(const std::string& s) {
  return std::as_bytes(std::span(s.data(), s.size()));
}

// Writes `n` samples {jpg: bytes, label: int64 scalar, emb: float32[3]}.
ShardWriterOptions three_fields(const std::string& dir, const std::string& format) {
  ShardWriterOptions o;
  o.dir = dir;
  o.format = format;
  o.fields = {{"jpg", "bytes", {}, ""}, {"label", "int64", {}, ""}, {"emb", "float32", {3}, ""}};
  return o;
}

std::string payload(std::uint64_t i) { return "jpeg-bytes-" + std::string(i * 37 % 900, 'x') + std::to_string(i); }

void write_samples(ShardWriter& w, std::uint64_t from, std::uint64_t to) {
  for (std::uint64_t i = from; i < to; ++i) {
    const std::string jpg = payload(i);
    const std::int64_t label = static_cast<std::int64_t>(i % 7) - 3;
    const float emb[3] = {float(i), 0.5f, -float(i)};
    const std::span<const std::byte> values[3] = {view(jpg), std::as_bytes(std::span(&label, 1)),
                                                  std::as_bytes(std::span(emb))};
    w.add(i, values, 0, i + 1);
  }
}

// A whole conversion of samples [0, n) with `shard_samples` per shard.
Manifest write_dataset(const std::string& dir, const std::string& format, std::uint64_t shard_samples,
                       std::uint64_t n) {
  auto o = three_fields(dir, format);
  o.shard_samples = shard_samples;
  ShardWriter w(o);
  write_samples(w, 0, n);
  return w.finish();
}

}  // namespace

TEST_CASE("TarWriter: Python's tarfile reads the members, names and bytes exact", "[writer]") {
  TempDir dir;
  const std::string path = dir.file("a.tar");
  TarWriter w(path);
  const std::string long_name = std::string(150, 'n') + ".txt";
  w.add("000000000.jpg", view("hello"));
  w.add("000000000.cls", view(""));
  w.add(long_name, view(std::string(1000, 'z')));
  CHECK_FALSE(std::filesystem::exists(path));  // only PATH.tmp until finish
  const ShardSummary s = w.finish();
  CHECK(std::filesystem::exists(path));
  CHECK_FALSE(std::filesystem::exists(path + ".tmp"));
  CHECK(s.bytes == std::filesystem::file_size(path));
  CHECK(s.bytes % 512 == 0);
  CHECK(s.checksum == detail::file_checksum(path));
  const std::string script =
      "import tarfile\n"
      "t = tarfile.open('a.tar')\n"
      "m = [(x.name, x.size, t.extractfile(x).read(), x.mtime, x.mode, x.isfile()) for x in t]\n"
      "assert [x[0] for x in m] == ['000000000.jpg', '000000000.cls', 'n' * 150 + '.txt'], m\n"
      "assert m[0][2] == b'hello' and m[1][2] == b'' and m[2][2] == b'z' * 1000\n"
      "assert all(x[3] == 0 and x[4] == 0o644 and x[5] for x in m)\n";
  run_numpy(script, dir.path());
  // And Sluice's own reader, by WebDataset keys.
  TarSource source({path});
  REQUIRE(source.size() == 2);
}

TEST_CASE("TarWriter: a writer dropped before finish leaves nothing", "[writer]") {
  TempDir dir;
  {
    TarWriter w(dir.file("b.tar"));
    w.add("x.txt", view("abc"));
  }
  CHECK(std::filesystem::is_empty(dir.path()));
}

TEST_CASE("Manifest: JSON round trip, and malformed manifests named", "[writer]") {
  Manifest m;
  m.shard_format = "tfrecord";
  m.complete = true;
  m.cut_bytes = 1 << 20;
  m.resume_batch = 3;
  m.resume_row = 7;
  m.fields = {{"jpg", "bytes", {}, "jpg"}, {"x", "float32", {2, 3}, "x.npy"}};
  m.shards = {{"shard-000000.tfrecord", 10, 1234, "xxh3:0123456789abcdef"}};
  m.plan = {{"seed", "5"}, {"shuffle", "true"}};
  const Manifest back = Manifest::from_json(m.to_json(), "m.json");
  CHECK(back.to_json() == m.to_json());
  CHECK(back.plan == m.plan);
  Manifest unplanned = m;  // as written before plans were recorded: no "plan" key
  unplanned.plan.clear();
  CHECK(unplanned.to_json().find("\"plan\"") == std::string::npos);
  CHECK(Manifest::from_json(unplanned.to_json(), "m").plan.empty());
  CHECK(back.fields == m.fields);
  CHECK(back.samples() == 10);
  CHECK_THROWS_WITH(Manifest::from_json("{\"format\": 1}", "DIR/manifest.json"),
                    Catch::Contains("manifest DIR/manifest.json"));
  std::string bad = m.to_json();
  bad.replace(bad.find("shard-000000.tfrecord"), 21, "../etc/passwd");
  CHECK_THROWS_WITH(Manifest::from_json(bad, "m"), Catch::Contains("not a file name"));
}

TEST_CASE("ShardWriter: tar shards cut by samples, read back by tarfile and TarSource", "[writer]") {
  TempDir dir;
  const std::string out = dir.file("ds");
  auto o = three_fields(out, "tar");
  o.shard_samples = 4;
  {
    ShardWriter w(o);
    write_samples(w, 0, 10);
    const Manifest& m = w.finish();
    REQUIRE(m.shards.size() == 3);
    CHECK(m.shards[0].samples == 4);
    CHECK(m.shards[2].samples == 2);
    CHECK(m.complete);
  }
  const Manifest m = *read_manifest(out);
  CHECK(m.fields[1].ext == "label.cls");
  CHECK(m.fields[2].ext == "emb.npy");
  for (const auto& s : m.shards) CHECK(check_shard(out, s).empty());
  const std::string script =
      "import tarfile, io, json, numpy as np\n"
      "m = json.load(open('ds/manifest.json'))\n"
      "i = 0\n"
      "for s in m['shards']:\n"
      "  t = tarfile.open('ds/' + s['name'])\n"
      "  names = t.getnames()\n"
      "  assert len(names) == 3 * s['samples'], names\n"
      "  for k in range(s['samples']):\n"
      "    key = '%09d' % i\n"
      "    jpg = t.extractfile(key + '.jpg').read()\n"
      "    assert jpg == b'jpeg-bytes-' + b'x' * (i * 37 % 900) + str(i).encode(), key\n"
      "    assert int(t.extractfile(key + '.label.cls').read()) == i % 7 - 3\n"
      "    e = np.load(io.BytesIO(t.extractfile(key + '.emb.npy').read()))\n"
      "    assert e.dtype == np.float32 and e.shape == (3,) and list(e) == [i, 0.5, -i], e\n"
      "    i += 1\n"
      "assert i == 10\n";
  run_numpy(script, dir.path());
  std::vector<std::string> shards;
  for (const auto& s : m.shards) shards.push_back(out + "/" + s.name);
  TarSource source(shards);
  CHECK(source.size() == 10);
}

TEST_CASE("ShardWriter: TFRecord shards of tf.train.Example with their index", "[writer]") {
  TempDir dir;
  const std::string out = dir.file("ds");
  write_dataset(out, "tfrecord", 3, 7);
  const Manifest m = *read_manifest(out);
  REQUIRE(m.shards.size() == 3);
  std::vector<std::string> shards;
  for (const auto& s : m.shards) {
    shards.push_back(out + "/" + s.name);
    CHECK(std::filesystem::exists(out + "/" + s.name + ".idx"));
  }
  TFRecordSource source(shards);
  REQUIRE(source.size() == 7);
  Example ex;
  std::vector<std::byte> buffer;
  for (std::uint64_t i = 0; i < 7; ++i) {
    Sample sample;
    read_sample(source, i, buffer, sample);
    ex.parse(sample.fields.at(0).bytes);
    CHECK(ex.bytes_at("jpg", 0) == payload(i));
    CHECK(ex.int64s("label")[0] == static_cast<std::int64_t>(i % 7) - 3);
    CHECK(ex.floats("emb").size() == 3);
    CHECK(ex.floats("emb")[2] == -float(i));
    CHECK(ex.bytes_at("__key__", 0) == detail::sample_key(i));
  }
}

TEST_CASE("ShardWriter: the byte cut depends only on the samples", "[writer]") {
  TempDir dir;
  auto o = three_fields(dir.file("a"), "tar");
  o.shard_bytes = 8 * 1024;
  {
    ShardWriter w(o);
    write_samples(w, 0, 40);
    w.finish();
  }
  const Manifest m = *read_manifest(dir.file("a"));
  REQUIRE(m.shards.size() > 2);
  for (const auto& s : m.shards) CHECK(s.bytes <= o.shard_bytes);
  CHECK(m.samples() == 40);
}

TEST_CASE("ShardWriter: resume keeps the completed shards and redoes the rest", "[writer]") {
  TempDir dir;
  const std::string out = dir.file("ds");
  auto o = three_fields(out, "tar");
  o.shard_samples = 4;
  {
    write_dataset(dir.file("whole"), "tar", 4, 10);
  }
  {
    ShardWriter w(o);
    write_samples(w, 0, 6);  // shard 0 complete, shard 1 half written: a .tmp
    REQUIRE(std::filesystem::exists(out + "/shard-000001.tar.tmp"));
    std::ofstream(out + "/shard-000002.tar") << "a stray file";  // as if left by something
    // Dropped without finish: like a killed run, bar the .tmp the destructor removes.
    std::ofstream(out + "/shard-000001.tar.tmp") << "partial";
    std::filesystem::copy_file(out + "/shard-000001.tar.tmp", dir.file("keep.tmp"));
  }
  std::filesystem::copy_file(dir.file("keep.tmp"), out + "/shard-000001.tar.tmp");
  {
    ShardWriter w(o);
    CHECK(w.shards_kept() == 1);
    CHECK(w.samples_kept() == 4);
    CHECK(w.resume_row() == 4);
    CHECK_FALSE(std::filesystem::exists(out + "/shard-000001.tar.tmp"));
    CHECK_FALSE(std::filesystem::exists(out + "/shard-000002.tar"));
    write_samples(w, w.resume_row(), 10);
    w.finish();
  }
  const Manifest a = *read_manifest(out), b = *read_manifest(dir.file("whole"));
  REQUIRE(a.shards.size() == b.shards.size());
  for (std::size_t i = 0; i < a.shards.size(); ++i) CHECK(a.shards[i].checksum == b.shards[i].checksum);
  // Another conversion into the same folder is refused.
  auto other = o;
  other.shard_samples = 5;
  CHECK_THROWS_WITH(ShardWriter(other), Catch::Contains("holds another conversion"));
  // One writer of a folder at a time: the lock goes with the writer.
  {
    ShardWriter first(o);
    CHECK_THROWS_WITH(ShardWriter(o), Catch::Contains(out + " is being written by another sluice write"));
  }
  CHECK_NOTHROW(ShardWriter(o));
}

TEST_CASE("ShardWriter: a resume with another plan is refused, naming what differs", "[writer]") {
  TempDir dir;
  const std::string out = dir.file("ds");
  auto o = three_fields(out, "tar");
  o.shard_samples = 2;
  o.plan = {{"dataset_size", "10"}, {"seed", "0"}, {"shuffle", "false"}};
  {
    ShardWriter w(o);
    write_samples(w, 0, 5);  // two shards listed, the third dropped unfinished
  }
  REQUIRE(read_manifest(out)->plan == o.plan);
  auto shuffled = o;
  shuffled.plan["seed"] = "5";
  shuffled.plan["shuffle"] = "true";
  shuffled.plan["script"] = "0123456789abcdef";
  CHECK_THROWS_WITH(ShardWriter(shuffled),
                    Catch::Contains(out + " was written with another plan") &&
                        Catch::Contains("seed 5 (written with 0), shuffle true (written with false)") &&
                        Catch::Contains("script 0123456789abcdef (written with none)") &&
                        Catch::Contains("settings it was written with") && Catch::Contains("new folder"));
  CHECK(read_manifest(out)->shards.size() == 2);  // refused before anything was touched
  {
    auto unchecked = o;  // no plan given: nothing to check, the manifest's is kept
    unchecked.plan.clear();
    ShardWriter w(unchecked);
    CHECK(w.shards_kept() == 2);
    CHECK(w.manifest().plan == o.plan);
  }
  // A manifest from before plans: an incomplete one cannot be resumed safely...
  Manifest old = *read_manifest(out);
  old.plan.clear();
  write_manifest(out, old);
  CHECK_THROWS_WITH(ShardWriter(o), Catch::Contains("records no plan"));
  // ... a complete one stays as it is.
  old.complete = true;
  write_manifest(out, old);
  CHECK(ShardWriter(o).already_complete());
  // The same plan resumes.
  old.complete = false;
  old.plan = o.plan;
  write_manifest(out, old);
  ShardWriter w(o);
  CHECK(w.shards_kept() == 2);
  write_samples(w, w.resume_row(), 10);
  CHECK(w.finish().samples() == 10);
}

TEST_CASE("Readers check a listed shard's checksum and name the corrupt one", "[writer]") {
  TempDir dir;
  const std::string out = dir.file("ds");
  write_dataset(out, "tar", 5, 10);
  const std::string victim = out + "/shard-000001.tar";
  std::vector<std::byte> bytes = read_file(victim);
  bytes[600] ^= std::byte{1};  // inside the first member's data: headers still parse
  sluice::io::test::write_file(victim, bytes);
  const Manifest m = *read_manifest(out);
  CHECK(check_shard(out, m.shards[0]).empty());
  CHECK_THAT(check_shard(out, m.shards[1]), Catch::Contains("shard-000001.tar: checksum"));
  CHECK_THROWS_WITH(TarSource({out + "/shard-000000.tar", victim}),
                    Catch::Contains("corrupt shard") && Catch::Contains("shard-000001.tar"));
}

TEST_CASE("Streaming readers check a listed shard's checksum and name a corrupt one", "[writer]") {
  for (const std::string format : {"tar", "tfrecord"}) {
    INFO(format);
    TempDir dir;
    const std::string out = dir.file("ds");
    const Manifest m = write_dataset(out, format, 3, 9);
    REQUIRE(m.shards.size() == 3);
    std::vector<std::string> shards;
    for (const auto& s : m.shards) shards.push_back(out + "/" + s.name);
    // One byte of the middle shard changed in place: same size, other checksum.
    {
      std::fstream f(shards[1], std::ios::in | std::ios::out | std::ios::binary);
      f.seekp(700);
      f.put('\x7f');
    }
    auto count = [&](sluice::OnError on_error) {
      StreamOptions o;
      o.on_error = on_error;
      std::unique_ptr<RecordStream> stream;
      if (format == "tar") stream = std::make_unique<TarStream>(shards, o);
      else stream = std::make_unique<TFRecordStream>(shards, o);
      stream->reset(0);
      Sample s;
      std::size_t n = 0;
      while (stream->next(s)) ++n;
      return std::make_pair(n, stream->skips().count() == 1 ? stream->skips().entries()[0].reason : std::string());
    };
    CHECK_THROWS_WITH(count(sluice::OnError::fail),
                      Catch::Contains("corrupt shard: " + shards[1] + ": checksum") &&
                          Catch::Contains("does not match the manifest's " + m.shards[1].checksum));
    const auto [n, why] = count(sluice::OnError::skip);
    CHECK(n == 6);  // the other two shards, whole
    CHECK_THAT(why, Catch::Contains("corrupt shard: " + shards[1]));
  }
}

TEST_CASE("ShardWriter: a TFRecord writes a float64 field as float32, as its manifest and a note say, and refuses "
          "a uint64 past int64", "[writer]") {
  TempDir dir;
  ShardWriterOptions o;
  o.dir = dir.file("f64");
  o.format = "tfrecord";
  o.shard_samples = 4;
  o.fields = {{"t", "float64", {}, ""}, {"n", "int64", {}, ""}};
  {
    ShardWriter w(o);
    REQUIRE(w.notes().size() == 1);
    CHECK_THAT(w.notes()[0], Catch::Contains("field 't' is float64: a TFRecord holds it as float32"));
    const double t = 1.1;
    const std::int64_t n = 5;
    const std::span<const std::byte> values[2] = {std::as_bytes(std::span(&t, 1)), std::as_bytes(std::span(&n, 1))};
    w.add(0, values, 0, 1);
    const Manifest m = w.finish();
    CHECK(m.fields[0].dtype == "float32");
    CHECK(m.fields[1].dtype == "int64");
  }
  CHECK(read_manifest(dir.file("f64"))->fields[0].dtype == "float32");
  CHECK_NOTHROW(ShardWriter(o));  // resumes the same conversion: complete
  o.dir = dir.file("tar");
  o.format = "tar";  // a .npy keeps float64
  {
    ShardWriter tar(o);
    CHECK(tar.notes().empty());
    CHECK(tar.manifest().fields[0].dtype == "float64");
  }

  o.dir = dir.file("u64");
  o.format = "tfrecord";
  o.fields = {{"id", "uint64", {2}, ""}};
  ShardWriter w(o);
  const std::uint64_t fits[2] = {7, std::uint64_t{INT64_MAX}};
  const std::span<const std::byte> ok[1] = {std::as_bytes(std::span(fits))};
  w.add(0, ok, 0, 1);
  const std::uint64_t past[2] = {7, std::uint64_t{INT64_MAX} + 1};
  const std::span<const std::byte> bad[1] = {std::as_bytes(std::span(past))};
  CHECK_THROWS_WITH(w.add(1, bad, 0, 2), Catch::Contains("sample 1, field 'id': uint64 9223372036854775808 does "
                                                         "not fit a TFRecord's int64_list"));
}

TEST_CASE("ShardWriter: a run killed while it wrote its first manifest is resumed, and its temporary removed",
          "[writer]") {
  TempDir dir;
  const std::string out = dir.file("ds");
  auto o = three_fields(out, "tar");
  o.shard_samples = 4;
  std::filesystem::create_directories(out);
  // What such a run leaves: a shard, and the manifest's temporary (of a process that is gone).
  write_dataset(dir.file("first"), "tar", 4, 4);
  std::filesystem::copy_file(dir.file("first/shard-000000.tar"), out + "/shard-000000.tar");
  const std::string left = out + "/manifest.json.tmp999999.0";
  std::ofstream(left) << "{\"partial";
  ShardWriter w(o);
  CHECK(w.shards_kept() == 0);  // no manifest listed it: made again
  CHECK_FALSE(std::filesystem::exists(left));
  write_samples(w, 0, 6);
  CHECK(w.finish().shards.size() == 2);
  // A user's file is still refused.
  o.dir = dir.file("users");
  std::filesystem::create_directories(o.dir);
  std::ofstream(o.dir + "/manifest.json.tmp.bak") << "mine";
  CHECK_THROWS_WITH(ShardWriter(o), Catch::Contains("is not empty and has no manifest.json"));
}
