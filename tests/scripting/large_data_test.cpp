// Data larger than the readers' buffers: a 256 MiB TFRecord file streamed
// through real workers must not grow any process's anonymous memory with the
// data size (the file's pages are page cache, which is not anonymous memory).
#include <catch2/catch.hpp>

#include <sys/types.h>

#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "sluice/io/tfrecord_writer.h"
#include "sluice/loader.h"
#include "sluice/script.h"
#include "support.h"

using sluice::test::TempDir;

namespace {

constexpr std::size_t kRecordBytes = 64 * 1024;
constexpr std::uint64_t kRecords = 4096;  // 256 MiB

// RssAnon of every descendant process, in KiB, by pid.
std::map<pid_t, long> anonymous_rss() {
  std::map<pid_t, long> rss;
  for (pid_t pid : sluice::test::descendants()) {
    std::ifstream status("/proc/" + std::to_string(pid) + "/status");
    std::string line;
    while (std::getline(status, line)) {
      if (line.rfind("RssAnon:", 0) == 0) rss[pid] = std::stol(line.substr(8));
    }
  }
  return rss;
}

}  // namespace

TEST_CASE("a 256 MiB TFRecord streams through workers with flat anonymous memory", "[large]") {
  TempDir dir;
  {
    sluice::io::TFRecordWriter writer(dir.path() + "/big.tfrecord");
    std::vector<std::byte> record(kRecordBytes, std::byte{7});
    for (std::uint64_t i = 0; i < kRecords; ++i) {
      std::memcpy(record.data(), &i, sizeof i);
      writer.write(record);
    }
    writer.close();
  }
  for (const char* index : {"true", "false"}) {
    INFO("index = " << index);
    const std::string path = dir.write("big.lua", std::string(R"(
local sluice = require("sluice")
local ffi = require("ffi")
return sluice.pipeline {
  source = sluice.tfrecord { "big.tfrecord", index = )") + index + R"( },
  fields = { { "id", "int64" }, { "tail", "uint8" } },
  map = function(s, ctx)
    return { id = ffi.cast("int64_t*", s.bytes.data)[0], tail = s.bytes.data[s.bytes.nbytes - 1] }
  end,
  batch_size = 32, workers = 2, shuffle = true,
}
)");
    sluice::Script script = sluice::load_script({.path = path});
    REQUIRE(script.options.dataset_size == kRecords);
    sluice::Loader loader(script.options);
    const std::uint64_t batches = kRecords / 32;
    std::map<pid_t, long> early, late;
    std::vector<bool> seen(kRecords, false);
    for (std::uint64_t b = 0; b < batches; ++b) {
      auto batch = loader.next();
      REQUIRE(batch);
      const sluice::FieldView ids = batch->field("id");
      for (std::size_t j = 0; j < batch->size(); ++j) {
        std::int64_t id;
        std::memcpy(&id, static_cast<const char*>(ids.data) + j * 8, 8);
        REQUIRE(id >= 0);
        REQUIRE(static_cast<std::uint64_t>(id) < kRecords);
        CHECK(!seen[static_cast<std::size_t>(id)]);
        seen[static_cast<std::size_t>(id)] = true;
      }
      if (b == 16) early = anonymous_rss();
      if (b == batches - 2) late = anonymous_rss();
    }
    REQUIRE(!early.empty());
    for (const auto& [pid, kib] : early) {
      if (!late.count(pid)) continue;
      INFO("process " << pid << ": RssAnon " << kib << " KiB after 16 batches, " << late[pid] << " KiB near the end");
      CHECK(late[pid] - kib < 16 * 1024);  // 16 MiB of slack against 256 MiB read
    }
  }
}
