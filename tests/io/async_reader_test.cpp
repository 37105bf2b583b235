#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <numeric>
#include <random>

#include "io_test_support.h"
#include "sluice/error.h"
#include "sluice/io/async_reader.h"
#include "sluice/io/file_source.h"
#include "sluice/io/tar.h"
#include "sluice/io/tfrecord.h"
#include "sluice/io/tfrecord_writer.h"

using namespace sluice::io;
using Catch::Matchers::Contains;

namespace {

std::string payload(std::uint64_t i) {
  return "sample-" + std::to_string(i) + std::string(i % 97 * 13, static_cast<char>('a' + i % 26));
}

// Three shards holding payload(0 .. n-1) in order.
std::vector<std::string> write_shards(const test::TempDir& dir, std::uint64_t n) {
  std::vector<std::string> paths;
  for (int k = 0; k < 3; ++k) paths.push_back(dir.file("shard" + std::to_string(k) + ".tfrecord"));
  std::vector<std::unique_ptr<TFRecordWriter>> writers;
  for (auto& p : paths) writers.push_back(std::make_unique<TFRecordWriter>(p));
  for (std::uint64_t i = 0; i < n; ++i) writers[i * 3 / n]->write(test::bytes_of(payload(i)));
  for (auto& w : writers) w->close();
  return paths;
}

}  // namespace

TEST_CASE("async reader: shuffled TFRecord ids come back in enqueue order", "[async]") {
  test::TempDir tmp;
  auto source = std::make_shared<TFRecordSource>(write_shards(tmp, 600));
  REQUIRE(source->size() == 600);
  std::vector<std::uint64_t> ids(600);
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), std::mt19937_64(1));

  for (std::uint32_t window : {1u, 8u, 64u}) {
    ReaderOptions options;
    options.window = window;
    options.slot_bytes = 64;  // forces buffers to grow
    AsyncReader reader(source, options);
    // Enqueue in batch-sized pieces, interleaved with taking, as a worker does.
    std::size_t taken = 0;
    for (std::size_t b = 0; b < ids.size(); b += 50) {
      reader.enqueue(std::span(ids).subspan(b, 50));
      while (reader.pending() > 25) {
        const Sample* s = reader.next();
        REQUIRE(s);
        REQUIRE(s->id == ids[taken]);
        REQUIRE(test::text_of(s->fields.at(0).bytes) == payload(ids[taken]));
        ++taken;
      }
    }
    while (const Sample* s = reader.next()) {
      REQUIRE(s->id == ids[taken]);
      REQUIRE(test::text_of(s->fields.at(0).bytes) == payload(ids[taken]));
      ++taken;
    }
    CHECK(taken == ids.size());
    CHECK(reader.pending() == 0);
    CHECK(reader.skips().count() == 0);
  }
}

TEST_CASE("async reader: a sample stays valid while more ids are enqueued", "[async]") {
  test::TempDir tmp;
  auto source = std::make_shared<TFRecordSource>(write_shards(tmp, 30));
  ReaderOptions options;
  options.window = 2;
  AsyncReader reader(source, options);
  reader.enqueue(std::vector<std::uint64_t>{5, 6});
  const Sample* s = reader.next();
  REQUIRE(s);
  const std::string before = test::text_of(s->fields[0].bytes);
  reader.enqueue(std::vector<std::uint64_t>{7, 8, 9});  // must not reuse the held slot
  CHECK(test::text_of(s->fields[0].bytes) == before);
  CHECK(before == payload(5));
  for (std::uint64_t want : {6, 7, 8, 9}) CHECK(reader.next()->id == want);
  CHECK(reader.next() == nullptr);
}

TEST_CASE("async reader: whole files from the pillow images match synchronous reads", "[async]") {
  SLUICE_REQUIRE_SHARED_DATA(data);
  auto source = FileSource::from_glob((data / "images/pillow-tests").string() + "/*.jpg");
  REQUIRE(source->size() > 20);
  std::vector<std::uint64_t> ids(source->size());
  std::iota(ids.begin(), ids.end(), 0);
  std::reverse(ids.begin(), ids.end());
  AsyncReader reader(source, {});
  reader.enqueue(ids);
  std::vector<std::byte> buf;
  Sample expected;
  for (std::uint64_t id : ids) {
    const Sample* s = reader.next();
    REQUIRE(s);
    REQUIRE(s->id == id);
    read_sample(*source, id, buf, expected);
    REQUIRE(s->path == expected.path);
    REQUIRE(std::equal(s->fields[0].bytes.begin(), s->fields[0].bytes.end(),
                       expected.fields[0].bytes.begin(), expected.fields[0].bytes.end()));
  }
  CHECK(reader.next() == nullptr);
}

TEST_CASE("async reader: on_error fail stops at a bad sample, skip reports count and ids", "[async]") {
  test::TempDir tmp;
  test::write_file(tmp.file("a.bin"), test::bytes_of("aaa"));
  test::write_file(tmp.file("c.bin"), test::bytes_of("ccc"));
  auto files = FileSource::from_list({tmp.file("a.bin"), tmp.file("missing.bin"), tmp.file("c.bin")});

  AsyncReader fail(files, {});
  fail.enqueue(std::vector<std::uint64_t>{0, 1, 2});
  CHECK(fail.next()->id == 0);
  CHECK_THROWS_WITH(fail.next(), Contains("cannot open " + tmp.file("missing.bin")));
  CHECK(fail.next()->id == 2);  // the reader stays usable after the error

  // A TFRecord shard corrupted after indexing: CRC error and truncation.
  auto shards = write_shards(tmp, 30);
  auto tf = std::make_shared<TFRecordSource>(shards);
  auto bytes = test::read_file(shards[0]);
  bytes[12 + 2] ^= std::byte{1};  // record 0's data
  test::write_file(shards[0], bytes);
  auto last = test::read_file(shards[2]);
  last.resize(last.size() - 5);
  test::write_file(shards[2], last);

  ReaderOptions options;
  options.on_error = sluice::OnError::skip;
  AsyncReader skip(tf, options);
  std::vector<std::uint64_t> ids(30);
  std::iota(ids.begin(), ids.end(), 0);
  skip.enqueue(ids);
  std::vector<std::uint64_t> good;
  while (const Sample* s = skip.next()) {
    if (s->skipped) {
      CHECK_FALSE(s->error.empty());
      continue;
    }
    good.push_back(s->id);
  }
  CHECK(good.size() == 28);
  REQUIRE(skip.skips().count() == 2);
  CHECK(skip.skips().entries()[0].id == 0);
  CHECK_THAT(skip.skips().entries()[0].reason,
             Contains(shards[0]) && Contains("record 0 at byte offset 0") && Contains("data CRC mismatch"));
  CHECK(skip.skips().entries()[1].id == 29);
  CHECK_THAT(skip.skips().entries()[1].reason, Contains(shards[2]) && Contains("truncated"));
  CHECK_THAT(skip.skips().report(), Contains("skipped 2 samples: ids 0, 29"));
}

TEST_CASE("async reader: each forked worker creates its own loop and pool", "[async]") {
  test::TempDir tmp;
  auto source = std::make_shared<TFRecordSource>(write_shards(tmp, 90));
  const bool env_preset = std::getenv("UV_THREADPOOL_SIZE") != nullptr;
  std::vector<pid_t> children;
  for (int w = 0; w < 2; ++w) {
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      int status = 0;
      try {
        ReaderOptions options;
        options.io_threads = 3;
        AsyncReader reader(source, options);
        if (!env_preset && std::string(std::getenv("UV_THREADPOOL_SIZE")) != "3") status = 2;
        for (std::uint64_t i = static_cast<std::uint64_t>(w); i < 90; i += 2) reader.enqueue(i);
        for (std::uint64_t i = static_cast<std::uint64_t>(w); i < 90; i += 2) {
          const Sample* s = reader.next();
          if (!s || s->id != i || test::text_of(s->fields[0].bytes) != payload(i)) status = 3;
        }
      } catch (...) {
        status = 4;
      }
      _exit(status);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int st = 0;
    REQUIRE(waitpid(pid, &st, 0) == pid);
    CHECK(WIFEXITED(st));
    CHECK(WEXITSTATUS(st) == 0);
  }
}

TEST_CASE("async reader: tar samples span their members in one read", "[async]") {
  SLUICE_REQUIRE_SHARED_DATA(data);
  auto source = std::make_shared<TarSource>(
      std::vector<std::string>{(data / "webdataset/pytorch-data/wds.tar").string(),
                               (data / "webdataset/webdataset-testdata/tendata.tar").string()});
  REQUIRE(source->size() == 110);
  AsyncReader reader(source, {});
  std::vector<std::uint64_t> ids(110);
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), std::mt19937_64(9));
  reader.enqueue(ids);
  for (std::uint64_t id : ids) {
    const Sample* s = reader.next();
    REQUIRE(s->id == id);
    if (id < 10) {
      REQUIRE(s->fields.size() == 2);
      CHECK(test::text_of(s->fields[1].bytes) == "bin" + std::to_string(id));
    } else {
      CHECK(s->fields[0].bytes.size() == 12736);
    }
  }
}

TEST_CASE("async reader: whole files in pool jobs of several files, any size, errors per file",
          "[async]") {
  test::TempDir tmp;
  std::vector<std::string> paths;
  std::vector<std::vector<std::byte>> contents;
  for (std::size_t i = 0; i < 40; ++i) {
    // Sizes: empty, smaller than the slot, exactly the slot, larger than it.
    const std::size_t size = i % 4 == 0 ? 0 : i % 4 == 1 ? 100 + i : i % 4 == 2 ? 4096 : 9000 + i;
    std::vector<std::byte> c(size);
    for (std::size_t k = 0; k < size; ++k) c[k] = std::byte(k * 13 + i);
    paths.push_back(tmp.file(std::to_string(i) + ".bin"));
    if (i == 17 || i == 30) {
      paths.back() = tmp.file(std::to_string(i) + ".missing");
    } else {
      test::write_file(paths.back(), c);
    }
    contents.push_back(std::move(c));
  }
  auto source = FileSource::from_list(paths);
  std::vector<std::uint64_t> ids(paths.size());
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), std::mt19937(5));

  for (std::uint32_t per_job : {1u, 3u, 8u, 64u}) {
    INFO("files per job " << per_job);
    ReaderOptions options;
    options.window = 12;
    options.slot_bytes = 4096;
    options.files_per_job = per_job;
    options.on_error = sluice::OnError::skip;
    AsyncReader reader(source, options);
    reader.enqueue(std::span<const std::uint64_t>(ids).first(25));
    std::size_t returned = 0;
    while (const Sample* s = reader.next()) {
      const std::uint64_t id = ids[returned++];
      REQUIRE(s->id == id);
      if (returned == 10) reader.enqueue(std::span<const std::uint64_t>(ids).subspan(25));
      if (id == 17 || id == 30) {
        CHECK(s->skipped);
        CHECK_THAT(s->error, Contains("cannot open " + paths[id]));
        continue;
      }
      REQUIRE_FALSE(s->skipped);
      CHECK(std::equal(contents[id].begin(), contents[id].end(), s->fields[0].bytes.begin(),
                       s->fields[0].bytes.end()));
    }
    CHECK(returned == ids.size());
    CHECK(reader.skips().count() == 2);
  }
}
