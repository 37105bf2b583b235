// Native sources end to end: pipeline.lua over real files (../shared/data:
// TFRecords written by TensorFlow, WebDataset tars, npy from NumPy, images),
// through load_script, a Loader and real workers.
#include <catch2/catch.hpp>

#include "skip.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "sluice/error.h"
#include "sluice/loader.h"
#include "sluice/script.h"
#include "support.h"

using Catch::Matchers::Contains;
using sluice::test::shared_data;
using sluice::test::TempDir;
namespace fs = std::filesystem;

namespace {

template <typename T>
std::vector<T> values(const sluice::Batch& batch, const char* field) {
  const sluice::FieldView view = batch.field(field);
  std::vector<T> out(view.nbytes / sizeof(T));
  std::memcpy(out.data(), view.data, view.nbytes);
  return out;
}

std::string pipeline(const std::string& source, const std::string& rest) {
  return "local sluice = require('sluice')\nreturn sluice.pipeline {\n  source = " + source + ",\n" + rest + "}\n";
}

std::vector<char> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const std::string& path, const std::vector<char>& bytes) {
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// The map of example.tfrecord: x_float (10 floats; x[0] = 10 i), x_int (10
// int64 = 10 x), x_byte ("test str"), read with sluice.example.
const char* kExampleMap = R"(
  fields = { { "x", "float32", { 10 } }, { "xi", "int32", { 10 } }, { "text", "uint8", { 8 } },
             { "record", "int64" }, { "offset", "int64" } },
  map = function(s, ctx)
    local ex = sluice.example(s)
    ctx.out.x:copy(ex:floats("x_float"))
    ex:read("x_int", ctx.out.xi)
    ctx.out.text:copy(ex:bytes("x_byte"))
    assert(ex:count("x_float") == 10 and ex:kind("x_byte") == "bytes_list" and ex:kind("nope") == nil)
    assert(s.path:find("%.tfrecord$"))
    return { x = ctx.out.x, xi = ctx.out.xi, text = ctx.out.text, record = s.record, offset = s.offset }
  end,
)";

// Every batch's (record -> x[0]) of an example.tfrecord pipeline, checking the values.
std::map<std::int64_t, float> drain_examples(sluice::Loader& loader) {
  std::map<std::int64_t, float> seen;
  while (auto batch = loader.next()) {
    const auto x = values<float>(*batch, "x");
    const auto xi = values<std::int32_t>(*batch, "xi");
    const auto text = values<char>(*batch, "text");
    const auto record = values<std::int64_t>(*batch, "record");
    for (std::size_t j = 0; j < batch->size(); ++j) {
      CHECK(x[j * 10] == Approx(10.0 * static_cast<double>(record[j])));
      for (int k = 0; k < 10; ++k) CHECK(xi[j * 10 + k] == static_cast<std::int32_t>(x[j * 10 + k] * 10));
      CHECK(std::string(&text[j * 8], 8) == "test str");
      CHECK(seen.emplace(record[j], x[j * 10]).second);
    }
  }
  return seen;
}

}  // namespace

TEST_CASE("tfrecord with an index: tf.train.Example decoded by name, shuffled, exactly once", "[sources]") {
  const std::string data = shared_data();
  if (data.empty()) return;
  TempDir dir;
  const std::string shard = data + "/tfrecord/pytorch-data/example.tfrecord";
  const std::string path = dir.write("tf.lua", pipeline("sluice.tfrecord { '" + shard + "', index_dir = 'idx' }",
                                                        std::string(kExampleMap) + "  batch_size = 3, shuffle = true, workers = 2,\n"));
  fs::create_directory(dir.path() + "/idx");
  sluice::Script script = sluice::load_script({.path = path});
  REQUIRE(script.options.dataset_size == 4);  // tfrecord/INDEX.txt: 4 records
  CHECK(script.options.fields.size() == 5);
  sluice::Loader loader(script.options);
  const auto seen = drain_examples(loader);
  CHECK(seen.size() == 4);
  CHECK(seen.begin()->first == 0);
  CHECK(seen.rbegin()->first == 3);
  CHECK(loader.stats().skipped_samples.empty());
}

TEST_CASE("tfrecord: SequenceExamples through sluice.sequence_example, which sluice.example refuses", "[sources]") {
  const std::string data = shared_data();
  if (data.empty()) return;
  TempDir dir;
  const std::string shard = data + "/tfrecord/pytorch-data/sequence_example.tfrecord";
  // Record r: context x_float = 10r .. 10r+9; 2r+3 steps, each repeating it.
  const std::string path = dir.write("seq.lua", pipeline("sluice.tfrecord { '" + shard + "', index_dir = 'idx' }", R"(
  fields = { { "x", "float32", { 10 } }, { "steps", "int64" }, { "last", "float32", { 10 } }, { "record", "int64" } },
  map = function(s, ctx)
    local seq = sluice.sequence_example(s)
    ctx.out.x:copy(seq.context:floats("x_float"))
    local n = seq:steps("x_float_seq")
    assert(seq:steps("x_int_seq") == n and seq:steps("nope") == 0)
    seq:step(n):read("x_float_seq", ctx.out.last)
    assert(seq:step(1):count("x_int_seq") == 10 and seq:step(1):kind("x_byte_seq") == "bytes_list")
    assert(seq:step(n):bytes("x_byte_seq").nbytes == 8)  -- "test str"
    local ok, err = pcall(function() return seq:step(n + 1):floats("x_float_seq") end)
    assert(not ok and err:find("step " .. n) and err:find("record " .. s.record), err)
    return { x = ctx.out.x, steps = n, last = ctx.out.last, record = s.record }
  end,
  batch_size = 4,
)"));
  fs::create_directory(dir.path() + "/idx");
  sluice::Script script = sluice::load_script({.path = path});
  sluice::Loader loader(script.options);
  auto batch = loader.next();
  REQUIRE(batch);
  const auto x = values<float>(*batch, "x");
  const auto last = values<float>(*batch, "last");
  const auto steps = values<std::int64_t>(*batch, "steps");
  const auto record = values<std::int64_t>(*batch, "record");
  for (std::size_t j = 0; j < 4; ++j) {
    CHECK(steps[j] == 2 * record[j] + 3);
    CHECK(x[j * 10] == static_cast<float>(10 * record[j]));
    CHECK(last[j * 10 + 9] == x[j * 10 + 9]);
  }
  const std::string wrong = dir.write("wrong.lua", pipeline("sluice.tfrecord { '" + shard + "', index_dir = 'idx' }", R"(
  fields = { { "x", "float32", { 10 } } },
  map = function(s, ctx) return { x = sluice.example(s):floats("x_float") } end,
)"));
  CHECK_THROWS_WITH(sluice::load_script({.path = wrong}),
                    Contains("sequence_example.tfrecord record 0") && Contains("a tf.train.SequenceExample") &&
                        Contains("sluice.sequence_example"));
}

TEST_CASE("tfrecord streaming: index = false reads each record once per pass", "[sources]") {
  const std::string data = shared_data();
  if (data.empty()) return;
  TempDir dir;
  const std::string shard = data + "/tfrecord/pytorch-data/example.tfrecord";
  const std::string path = dir.write("tf.lua", pipeline("sluice.tfrecord { '" + shard + "', index = false, shuffle_buffer = 3 }",
                                                        std::string(kExampleMap) + "  batch_size = 2, workers = 2,\n"));
  sluice::Script script = sluice::load_script({.path = path});
  CHECK(script.options.dataset_size == 4);
  CHECK(script.options.workers == 1);  // one shard: one partition
  const bool noted = std::any_of(script.notes.begin(), script.notes.end(), [](const std::string& n) {
    return n.find("counted 4 records") != std::string::npos;
  });
  CHECK(noted);
  sluice::Loader loader(script.options);
  CHECK(drain_examples(loader).size() == 4);
}

TEST_CASE("tar: WebDataset members grouped into samples with fields by extension", "[sources]") {
  const std::string data = shared_data();
  if (data.empty()) return;
  TempDir dir;
  const std::string tar = data + "/webdataset/pytorch-data/wds.tar";
  const std::string path = dir.write("tar.lua", pipeline("sluice.tar { '" + tar + "' }", R"(
  fields = { { "n", "int32" }, { "txt", "uint8", { 5 } }, { "bin", "uint8", { 4 } } },
  map = function(s, ctx)
    local n = tonumber(s.key:match("^data/(%d+)$"))
    assert(s.fields.txt.nbytes == 5 and s.fields.bin.nbytes == 4 and s.bytes == nil)
    return { n = n, txt = s.fields.txt, bin = s.fields.bin }
  end,
  batch_size = 4, shuffle = true, seed = 3, workers = 2,
)"));
  sluice::Script script = sluice::load_script({.path = path});
  REQUIRE(script.options.dataset_size == 10);  // webdataset/INDEX.txt: 10 samples
  sluice::Loader loader(script.options);
  std::set<int> seen;
  while (auto batch = loader.next()) {
    const auto n = values<std::int32_t>(*batch, "n");
    const auto txt = values<char>(*batch, "txt");
    const auto bin = values<char>(*batch, "bin");
    for (std::size_t j = 0; j < batch->size(); ++j) {
      CHECK(std::string(&txt[j * 5], 5) == "text" + std::to_string(n[j]));
      CHECK(std::string(&bin[j * 4], 4) == "bin" + std::to_string(n[j]));
      seen.insert(n[j]);
    }
  }
  CHECK(seen.size() == 10);
}

TEST_CASE("local shards by WebDataset brace ranges, and a file whose name holds braces taken as it is", "[sources]") {
  const std::string data = shared_data();
  if (data.empty()) return;
  TempDir dir;
  const std::string tar = data + "/webdataset/pytorch-data/wds.tar";  // 10 samples
  for (const char* name : {"shard-000.tar", "shard-001.tar", "shard-002.tar", "odd{1}.tar"})
    fs::copy_file(tar, dir.path() + "/" + name);
  fs::create_directories(dir.path() + "/{raw}");
  fs::copy_file(tar, dir.path() + "/{raw}/x.tar");
  const std::string rest = R"(
  fields = { { "n", "int32" } },
  map = function(s, ctx) return { n = tonumber(s.key:match("^data/(%d+)$")) } end,
  batch_size = 4,
)";
  sluice::Script script = sluice::load_script(
      {.path = dir.write("braces.lua", pipeline("sluice.tar { 'shard-{000..001}.tar', 'odd{1}.tar' }", rest))});
  CHECK(script.options.dataset_size == 30);
  script = sluice::load_script({.path = dir.write("list.lua", pipeline("sluice.tar { 'shard-{000,002}.tar' }", rest))});
  CHECK(script.options.dataset_size == 20);
  CHECK_THROWS_WITH(sluice::load_script({.path = dir.write("bad.lua", pipeline("sluice.tar { 'shard-{002..000}.tar' }", rest))}),
                    Contains("sluice.tar: bad brace range {002..000}") && Contains("runs backwards"));
  // A brace without a range or list is part of the name, in a glob too.
  script = sluice::load_script({.path = dir.write("raw.lua", pipeline("sluice.tar { '{raw}/*.tar' }", rest))});
  CHECK(script.options.dataset_size == 10);
}

TEST_CASE("tar: a gzip-compressed shard streams its 90 png + cls samples", "[sources]") {
  const std::string data = shared_data();
  if (data.empty()) return;
  TempDir dir;
  const std::string tgz = data + "/webdataset/webdataset-testdata/sample.tgz";
  const std::string path = dir.write("tgz.lua", pipeline("sluice.tar { '" + tgz + "', shuffle_buffer = 16 }", R"(
  fields = { { "cls", "int32" }, { "png", "bool" }, { "key", "int32" } },
  map = function(s, ctx)
    local p = s.fields.png.data
    local cls = tonumber(ffi_string(s.fields.cls.data, s.fields.cls.nbytes))
    return { cls = cls, png = p[1] == 80 and p[2] == 78 and p[3] == 71, key = tonumber(s.key) }
  end,
  batch_size = 16,
)").insert(0, "local ffi = require('ffi')\nlocal function ffi_string(p, n) return ffi.string(p, n) end\n"));
  sluice::Script script = sluice::load_script({.path = path});
  REQUIRE(script.options.dataset_size == 90);
  sluice::Loader loader(script.options);
  std::set<int> keys;
  while (auto batch = loader.next()) {
    const auto cls = values<std::int32_t>(*batch, "cls");
    const auto png = values<std::uint8_t>(*batch, "png");
    const auto key = values<std::int32_t>(*batch, "key");
    for (std::size_t j = 0; j < batch->size(); ++j) {
      CHECK(png[j]);
      CHECK(cls[j] >= 0);
      CHECK(cls[j] <= 9);
      keys.insert(key[j]);
    }
  }
  CHECK(keys.size() == 90);
}

TEST_CASE("npy: rows of C and Fortran arrays as typed fields, no map needed", "[sources]") {
  const std::string data = shared_data();
  if (data.empty()) return;
  TempDir dir;
  const std::string npy = data + "/npy/xtensor/";
  const std::string path = dir.write("npy.lua", pipeline(
      "sluice.npy { c = '" + npy + "double.le.npy', f = '" + npy + "double_fortran.le.npy', "
      "old = '" + npy + "old16align_double_fortran.npy' }", "  batch_size = 2, workers = 2,\n"));
  sluice::Script script = sluice::load_script({.path = path});
  REQUIRE(script.options.dataset_size == 3);
  REQUIRE(script.options.fields.size() == 3);
  CHECK(script.options.fields[0].shape == std::vector<std::int64_t>{3, 3});
  CHECK(script.options.fields[0].dtype == sluice::DType::f64);
  sluice::Loader loader(script.options);
  std::size_t rows = 0;
  while (auto batch = loader.next()) {
    const auto c = values<double>(*batch, "c");
    CHECK(c == values<double>(*batch, "f"));
    CHECK(c == values<double>(*batch, "old"));
    rows += batch->size();
  }
  CHECK(rows == 3);
  CHECK_THROWS_WITH(sluice::load_script({.path = dir.write("bad.lua", pipeline(
                        "sluice.npy { '" + npy + "double.le.npy', '" + npy + "int.le.npy' }", ""))}),
                    Contains("int.le.npy has 5 rows") && Contains("same first dimension"));
}

TEST_CASE("npy: members of .npz archives, stored and deflated, as fields", "[sources]") {
  TempDir dir;
  // Written by numpy.savez / savez_compressed: x = arange(12, float32).reshape(4, 3), y = int64 [1..4].
  const std::string npz = std::string(SLUICE_IO_TEST_DATA) + "/";
  const std::string path = dir.write("npz.lua", pipeline(
      "sluice.npy { { '" + npz + "small.npz', member = 'x' }, label = { '" + npz +
      "small_compressed.npz', member = 'y' } }", "  batch_size = 4,\n"));
  sluice::Script script = sluice::load_script({.path = path});
  REQUIRE(script.options.dataset_size == 4);
  sluice::Loader loader(script.options);
  auto batch = loader.next();
  REQUIRE(batch);
  CHECK(values<float>(*batch, "x") == std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  CHECK(values<std::int64_t>(*batch, "label") == std::vector<std::int64_t>{1, 2, 3, 4});
  CHECK_THROWS_WITH(sluice::load_script({.path = dir.write("bare.lua", pipeline(
                        "sluice.npy { '" + npz + "small.npz' }", ""))}),
                    Contains("small.npz") && Contains(".npz archive") && Contains("members: x, y"));
  CHECK_THROWS_WITH(sluice::load_script({.path = dir.write("nomember.lua", pipeline(
                        "sluice.npy { { '" + npz + "small.npz', member = 'z' } }", ""))}),
                    Contains("no member 'z'"));
}

TEST_CASE("files and folders: globs with ** and labels from an ImageNet-style tree", "[sources]") {
  const std::string data = shared_data();
  if (data.empty()) return;
  TempDir dir;
  // Two classes of real images, plus a hidden file and a non-image.
  const fs::path images = data + "/images/pillow-tests";
  std::vector<fs::path> pngs, jpgs;
  for (const auto& entry : fs::recursive_directory_iterator(images)) {
    if (entry.path().extension() == ".png" && pngs.size() < 5) pngs.push_back(entry.path());
    if (entry.path().extension() == ".jpg" && jpgs.size() < 3) jpgs.push_back(entry.path());
  }
  REQUIRE(pngs.size() == 5);
  REQUIRE(jpgs.size() == 3);
  for (std::size_t i = 0; i < pngs.size(); ++i) {
    fs::create_directories(dir.path() + "/train/b_png/sub");
    fs::copy_file(pngs[i], dir.path() + "/train/b_png/" + (i % 2 ? "sub/" : "") + std::to_string(i) + ".png");
  }
  fs::create_directories(dir.path() + "/train/a_jpg");
  for (std::size_t i = 0; i < jpgs.size(); ++i)
    fs::copy_file(jpgs[i], dir.path() + "/train/a_jpg/" + std::to_string(i) + ".jpg");
  dir.write("train/a_jpg/.hidden.jpg", "x");
  dir.write("train/a_jpg/notes.txt", "x");

  const char* map = R"(
  fields = { { "label", "int64" }, { "png", "bool" }, { "size", "int64" } },
  map = function(s, ctx)
    local p = s.bytes.data
    return { label = s.label, png = p[1] == 80 and p[2] == 78, size = s.bytes.nbytes }
  end,
  batch_size = 3, workers = 2, read_ahead = 2, io_threads = 2,
)";
  struct Case {
    std::string source;
    std::size_t count;
    bool labelled;
  };
  for (const Case& c : {Case{"sluice.folders { 'train', extensions = { 'png', 'JPG' } }", 8, true},
                        Case{"sluice.folders('train')", 9, true},
                        Case{"sluice.files { dir = 'train', match = '**/*.png' }", 5, false},
                        Case{"sluice.files { 'train/a_jpg/*.jpg', 'train/b_png/**/*.png' }", 8, false}}) {
    INFO(c.source);
    sluice::Script script = sluice::load_script({.path = dir.write("files.lua", pipeline(c.source, map))});
    REQUIRE(script.options.dataset_size == c.count);
    sluice::Loader loader(script.options);
    std::size_t n = 0;
    while (auto batch = loader.next()) {
      const auto label = values<std::int64_t>(*batch, "label");
      const auto png = values<std::uint8_t>(*batch, "png");
      const auto size = values<std::int64_t>(*batch, "size");
      for (std::size_t j = 0; j < batch->size(); ++j) {
        CHECK(size[j] > 0);
        if (c.labelled) {
          CHECK(label[j] == (png[j] ? 1 : 0));  // classes sorted: a_jpg = 0, b_png = 1
        } else {
          CHECK(label[j] == -1);
        }
        ++n;
      }
    }
    CHECK(n == c.count);
  }
}

TEST_CASE("a corrupt TFRecord: fail names file and record, skip drops and reports it", "[sources]") {
  const std::string data = shared_data();
  if (data.empty()) return;
  TempDir dir;
  std::vector<char> bytes = read_bytes(data + "/tfrecord/pytorch-data/example.tfrecord");
  // Record 2 starts at byte 255 (tfrecord/INDEX.txt offsets); flip a data byte.
  bytes[255 + 12 + 20] ^= 0x40;
  const std::string bad = dir.path() + "/bad.tfrecord";
  write_bytes(bad, bytes);
  for (const char* mode : {"true", "false"}) {
    INFO("index = " << mode);
    const std::string source = std::string("sluice.tfrecord { 'bad.tfrecord', index = ") + mode + " }";
    const std::string rest = std::string(kExampleMap) + "  batch_size = 2, workers = 1,\n";
    const std::string fail = dir.write("fail.lua", pipeline(source, rest));
    const std::string skip = dir.write("skip.lua", pipeline(source, rest + "  on_error = 'skip',\n"));

    const sluice::test::CliResult failed = sluice::test::run_cli({"run", fail, "--quiet"});
    CHECK(failed.status == 1);
    CHECK_THAT(failed.err, Contains(bad) && Contains("record 2") && Contains("byte offset 255"));
    CHECK(sluice::test::wait_for_no_descendants(5000).empty());

    {
      sluice::Script script = sluice::load_script({.path = skip});
      sluice::Loader loader(script.options);
      const auto seen = drain_examples(loader);
      CHECK(seen.size() == 3);
      CHECK(seen.count(2) == 0);
      CHECK(loader.stats().skipped_samples.size() == 1);
    }

    const sluice::test::CliResult skipped = sluice::test::run_cli({"run", skip, "--quiet"});
    CHECK(skipped.status == 0);
    CHECK_THAT(skipped.out, Contains("skipped     1 sample (on_error = \"skip\"): ids "));
    CHECK_THAT(skipped.out, Contains(bad) && Contains("record 2"));  // the summary's reason, not a worker's stderr
    CHECK_THAT(skipped.err, !Contains("skips sample"));
    CHECK(sluice::test::wait_for_no_descendants(5000).empty());
  }
}

TEST_CASE("a missing file under skip is dropped, a corrupt tar header names its offset", "[sources]") {
  const std::string data = shared_data();
  if (data.empty()) return;
  TempDir dir;
  dir.write("a.bin", "aaaa");
  dir.write("c.bin", "cc");
  const std::string path = dir.write("files.lua", pipeline("sluice.files { 'a.bin', 'b.bin', 'c.bin' }", R"(
  map = function(s, ctx) return { n = s.bytes.nbytes } end,
  fields = { n = "int64" }, batch_size = 3, on_error = "skip",
)"));
  sluice::Script script = sluice::load_script({.path = path});
  sluice::Loader loader(script.options);
  std::vector<std::int64_t> sizes;
  while (auto batch = loader.next()) {
    const auto n = values<std::int64_t>(*batch, "n");
    sizes.insert(sizes.end(), n.begin(), n.end());
  }
  CHECK(sizes == std::vector<std::int64_t>{4, 2});
  CHECK(loader.stats().skipped_samples == std::vector<std::uint64_t>{1});

  std::vector<char> tar = read_bytes(data + "/webdataset/pytorch-data/wds.tar");
  tar[4096 + 5] ^= 0x20;  // the 5th member header (data/2.txt)
  write_bytes(dir.path() + "/bad.tar", tar);
  const std::string rest = "  map = function(s, ctx) return { n = s.fields.txt.nbytes } end,\n";
  CHECK_THROWS_WITH(sluice::load_script({.path = dir.write("tar.lua", pipeline("sluice.tar { 'bad.tar' }", rest))}),
                    Contains("bad.tar") && Contains("byte offset 4096") && Contains("corrupt tar header"));
  sluice::Script cut = sluice::load_script(
      {.path = dir.write("tar.lua", pipeline("sluice.tar { 'bad.tar' }", rest + "  on_error = 'skip',\n"))});
  CHECK(cut.options.dataset_size == 2);  // the shard is read up to the bad header
  const bool noted = std::any_of(cut.notes.begin(), cut.notes.end(), [](const std::string& n) {
    return n.find("byte offset 4096") != std::string::npos;
  });
  CHECK(noted);
}

TEST_CASE("jsonl: gzip JSON lines reach map as bytes, a broken line fails by file and line or is skipped", "[sources]") {
  if (std::system("command -v gzip >/dev/null") != 0) SKIP_TEST("the gzip command is absent (it writes the test file)");
  TempDir dir;
  std::string text;
  for (int i = 0; i < 20; ++i) {
    if (i == 13) text += "{\"id\": 13, \"text\": \"cut\n";  // line 14: a string left open
    else text += "{\"id\": " + std::to_string(i) + ", \"doc\": {\"text\": \"sample-" + std::to_string(i) +
                 (i % 3 == 0 ? "\\u00e9" : "") + "\"}}\n";
  }
  dir.write("c.jsonl", text);
  REQUIRE(std::system(("gzip -f " + dir.path() + "/c.jsonl").c_str()) == 0);
  const std::string source = "sluice.jsonl { 'c.jsonl.gz', field = 'doc.text' }";
  const std::string rest = R"(
  fields = { { "id", "int64" }, { "len", "int64" }, { "last", "int64" } },
  map = function(s, ctx)
    local ffi = require('ffi')
    local id = tonumber(ffi.string(s.fields.id.data, s.fields.id.nbytes))
    assert(s.path:find("c%.jsonl%.gz$"))
    return { id = id, len = s.bytes.nbytes, last = s.bytes.data[s.bytes.nbytes - 1] }
  end,
  batch_size = 4, workers = 2, shuffle = true,
)";
  const std::string fail = dir.write("fail.lua", pipeline(source, rest));
  const std::string skip = dir.write("skip.lua", pipeline(source, rest + "  on_error = 'skip',\n"));
  const sluice::test::CliResult failed = sluice::test::run_cli({"run", fail, "--quiet"});
  CHECK(failed.status == 1);
  CHECK_THAT(failed.err, Contains(dir.path() + "/c.jsonl.gz: line 14: column"));
  CHECK(sluice::test::wait_for_no_descendants(5000).empty());

  sluice::Script script = sluice::load_script({.path = skip});
  CHECK(script.options.dataset_size == 20);
  sluice::Loader loader(script.options);
  std::set<std::int64_t> seen;
  while (auto batch = loader.next()) {
    const auto id = values<std::int64_t>(*batch, "id");
    const auto len = values<std::int64_t>(*batch, "len");
    const auto last = values<std::int64_t>(*batch, "last");
    for (std::size_t j = 0; j < batch->size(); ++j) {
      const std::string expect = "sample-" + std::to_string(id[j]) + (id[j] % 3 == 0 ? "\xc3\xa9" : "");
      CHECK(len[j] == static_cast<std::int64_t>(expect.size()));
      CHECK(last[j] == static_cast<unsigned char>(expect.back()));
      CHECK(seen.insert(id[j]).second);
    }
  }
  CHECK(seen.size() == 19);
  CHECK(seen.count(13) == 0);
  CHECK(loader.stats().skipped_samples.size() == 1);

  // An empty file is an empty value, not a null (a Parquet null is refused).
  dir.write("t/0.txt", "");
  dir.write("t/1.txt", "hi");
  sluice::Script texts = sluice::load_script(
      {.path = dir.write("texts.lua", pipeline("sluice.files { 't/*.txt' }",
                                               "  fields = { { 'text', 'bytes', 16 } },\n"
                                               "  map = function(s) return { text = s.bytes } end,\n"
                                               "  batch_size = 2,\n"))});
  sluice::Loader text_loader(texts.options);
  auto text_batch = text_loader.next();
  REQUIRE(text_batch);
  const auto slots = values<std::int64_t>(*text_batch, "text");  // per row: length, then 16 bytes
  CHECK(slots[0] == 0);
  CHECK(slots[3] == 2);

  // The field is text: null or a number there is the line's error (or its
  // skip), never the text "null"; other keys keep their JSON text.
  dir.write("kinds.jsonl", "{\"text\": \"a\", \"n\": null}\n{\"text\": null}\n{\"text\": \"null\"}\n"
                           "{\"text\": 12}\n{\"text\": \"b\", \"n\": 12}\n");
  const std::string kinds = R"(
  fields = { { "text", "bytes", 8 }, { "n", "bytes", 8 } },
  map = function(s)
    local ffi = require('ffi')
    return { text = s.bytes, n = s.fields.n and ffi.string(s.fields.n.data, s.fields.n.nbytes) or "-" }
  end,
  batch_size = 5,
)";
  const sluice::test::CliResult refused =
      sluice::test::run_cli({"run", dir.write("kinds.lua", pipeline("sluice.jsonl { 'kinds.jsonl' }", kinds)), "--quiet"});
  CHECK(refused.status == 1);
  CHECK_THAT(refused.err, Contains(dir.path() + "/kinds.jsonl: line 2: \"text\" is null, not a string"));
  sluice::Script kept = sluice::load_script(
      {.path = dir.write("kinds_skip.lua", pipeline("sluice.jsonl { 'kinds.jsonl' }", kinds + "  on_error = 'skip',\n"))});
  sluice::Loader kinds_loader(kept.options);
  auto kinds_batch = kinds_loader.next();
  REQUIRE(kinds_batch);
  CHECK(kinds_batch->size() == 3);  // lines 1, 3 and 5
  CHECK(kinds_loader.stats().skipped_samples.size() == 2);
  const auto n = values<std::int64_t>(*kinds_batch, "n");  // per row: length, then 8 bytes
  auto n_text = [&](std::size_t row) {
    return std::string(reinterpret_cast<const char*>(&n[2 * row + 1]), static_cast<std::size_t>(n[2 * row]));
  };
  CHECK(n_text(0) == "null");  // other keys keep their JSON text
  CHECK(n_text(1) == "-");
  CHECK(n_text(2) == "12");
  // field = false: lines without text, read by their keys.
  sluice::Script keys_only = sluice::load_script({.path = dir.write(
      "keys.lua", pipeline("sluice.jsonl { 'kinds.jsonl', field = false }",
                           "  fields = { { 'n', 'bytes', 8 } },\n"
                           "  map = function(s) return { n = s.fields.n and 'has' or 'none' } end,\n"
                           "  batch_size = 5,\n"))});
  sluice::Loader keys_loader(keys_only.options);
  auto keys_batch = keys_loader.next();
  REQUIRE(keys_batch);
  CHECK(keys_batch->size() == 5);  // every line, null and numbers in text included

  // Files without a line: the error names what the pipeline gave.
  dir.write("empty.jsonl", "");
  CHECK_THROWS_WITH(sluice::load_script({.path = dir.write("empty.lua", pipeline("sluice.jsonl { 'empty.jsonl' }", rest))}),
                    Contains("sluice.jsonl: the data set holds no samples (" + dir.path() + "/empty.jsonl)"));
}

TEST_CASE("an index that cannot be saved is noted, and the run reads from the index in memory", "[sources]") {
  TempDir dir;
  std::string text;
  for (int i = 0; i < 50; ++i) text += "{\"text\": \"line " + std::to_string(i) + "\"}\n";
  dir.write("a.jsonl", text);
  dir.write("not_a_folder", "");  // index_dir here: every write under it fails (ENOTDIR), as a full disk's would
  const std::string rest = "  map = function(s, ctx) return { n = ctx.index } end,\n  fields = { { 'n', 'int64' } },\n";
  sluice::Script script = sluice::load_script({.path = dir.write(
      "p.lua", pipeline("sluice.jsonl { 'a.jsonl', field = 'text', index_dir = '" + dir.path() + "/not_a_folder' }", rest))});
  CHECK(script.options.dataset_size == 50);
  const bool noted = std::any_of(script.notes.begin(), script.notes.end(), [&](const std::string& n) {
    return n.find("sluice.jsonl: 1 index could not be saved (cannot write " + dir.path() + "/not_a_folder/") == 0 &&
           n.find("Not a directory") != std::string::npos && n.find("the next run reads the files again to rebuild it") != std::string::npos;
  });
  INFO((script.notes.empty() ? std::string("no notes") : script.notes.front()));
  CHECK(noted);
  sluice::Loader loader(script.options);
  std::int64_t total = 0;
  while (auto batch = loader.next())
    for (std::int64_t n : values<std::int64_t>(*batch, "n")) total += n;
  CHECK(total == 49 * 50 / 2);  // every line once
}

TEST_CASE("a pattern over a data folder leaves out the sidecars Sluice wrote there: the next run reads the same data", "[sources]") {
  if (std::system("command -v gzip >/dev/null") != 0) SKIP_TEST("the gzip command is absent (it writes the test file)");
  TempDir dir;
  std::string text;
  for (int i = 0; i < 10; ++i) text += "{\"text\": \"line " + std::to_string(i) + "\"}\n";
  dir.write("g/a.jsonl", text);
  dir.write("g/b.jsonl", text);
  REQUIRE(std::system(("gzip -f " + dir.path() + "/g/b.jsonl").c_str()) == 0);
  dir.write("g/c.jsonl.idx", text);  // a file of this name that no matched file owns is data
  // What a run killed while writing them leaves: left out too.
  dir.write("g/a.jsonl.idx.tmp4242.7", "not json\n");
  dir.write("g/b.jsonl.gz.plain.part4242", "not json\n");
  // And what one writes while another run (another rank) lists the folder.
  dir.write("g/b.jsonl.gz.plain.part4243.tmp4243.0", "not json\n");
  dir.write("g/a.jsonl.tmp4242.1", "not json\n");
  const std::string script = dir.write("p.lua", pipeline("sluice.jsonl { 'g/*' }",
                                                         "  fields = { { 'n', 'int64' } },\n"
                                                         "  map = function(s) return { n = s.bytes.nbytes } end,\n"));
  for (int run = 0; run < 3; ++run) {
    INFO("run " << run);
    const sluice::Script s = sluice::load_script({.path = script});
    CHECK(s.options.dataset_size == 30);
  }
  // The first run wrote a.jsonl.idx, b.jsonl.gz.idx and b.jsonl.gz.plain beside them.
  CHECK(std::filesystem::exists(dir.path() + "/g/a.jsonl.idx"));
  CHECK(std::filesystem::exists(dir.path() + "/g/b.jsonl.gz.plain"));
}

TEST_CASE("shuffle_window: a pipeline over JSON lines files reads them a window of files at a time", "[sources]") {
  TempDir dir;
  // 8 files of 3 to 10 lines: line j of file f is {"f": f, "text": "f-j"}.
  std::vector<std::uint64_t> sizes;
  for (int f = 0; f < 8; ++f) {
    std::string text;
    const int lines = 3 + (f * 5) % 8;
    for (int j = 0; j < lines; ++j)
      text += "{\"f\": " + std::to_string(f) + ", \"text\": \"" + std::to_string(f) + "-" + std::to_string(j) + "\"}\n";
    dir.write("part-" + std::to_string(f) + ".jsonl", text);
    sizes.push_back(static_cast<std::uint64_t>(lines));
  }
  const std::string path = dir.write("w.lua", pipeline("sluice.jsonl { 'part-*.jsonl' }", R"(
  fields = { { "file", "int64" } },
  map = function(s, ctx)
    local ffi = require('ffi')
    return { file = tonumber(ffi.string(s.fields.f.data, s.fields.f.nbytes)) }
  end,
  batch_size = 4, workers = 2, shuffle = true, shuffle_window = 2, epochs = 2, seed = 5,
)"));
  sluice::Script script = sluice::load_script({.path = path});
  CHECK(script.options.shuffle_window == 2);
  CHECK(script.options.shard_sizes == sizes);
  const sluice::EpochPlan plan(script.options);
  REQUIRE(plan.shard_shuffle() != nullptr);
  sluice::Loader loader(script.options);
  std::map<std::uint64_t, std::vector<std::int64_t>> files;  // epoch -> file of each position
  std::map<std::uint64_t, std::multiset<std::uint64_t>> ids;
  while (auto batch = loader.next()) {
    const auto file = values<std::int64_t>(*batch, "file");
    for (std::size_t j = 0; j < batch->size(); ++j) {
      files[batch->epoch()].push_back(file[j]);
      ids[batch->epoch()].insert(batch->sample_ids()[j]);
    }
  }
  for (std::uint64_t epoch : {0u, 1u}) {
    INFO("epoch " << epoch);
    CHECK(ids[epoch].size() == 52);
    CHECK(std::set<std::uint64_t>(ids[epoch].begin(), ids[epoch].end()).size() == 52);
    // Each window's positions read only its 2 files, and all of each file's lines are there.
    const auto order = plan.shard_shuffle()->epoch(epoch);
    for (std::uint64_t p = 0; p < files[epoch].size(); ++p) {
      const auto window = order->shards_between(p, p + 1);
      CHECK(window.size() <= 2);
      CHECK(std::count(window.begin(), window.end(), static_cast<std::uint32_t>(files[epoch][p])) == 1);
    }
  }
}
