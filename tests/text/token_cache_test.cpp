// The token cache: text tokenized once per node into a Megatron dataset,
// found again by later calls, the same for any thread count, never left
// half made, and made by one process when several race for it.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>

#include "sluice/error.h"
#include "sluice/text/token_cache.h"
#include "sluice/text/token_file.h"
#include "io_test_support.h"

using namespace sluice::text;
using sluice::io::test::TempDir;

namespace {

constexpr std::uint32_t kEos = 1;

// Document d: (d % 7) + 1 ids, d + 2, d + 3, ...
std::vector<std::int32_t> ids_of(std::uint64_t d) {
  std::vector<std::int32_t> ids;
  for (std::uint64_t i = 0; i <= d % 7; ++i) ids.push_back(static_cast<std::int32_t>(d + 2 + i));
  return ids;
}

TokenCacheRequest request(const std::string& dir, std::uint64_t documents, unsigned threads) {
  TokenCacheRequest r;
  r.dir = dir;
  r.identity = "test corpus of " + std::to_string(documents);
  r.documents = documents;
  r.threads = threads;
  r.dtype = TokenType::uint16;
  r.eos = kEos;
  r.encode = [](std::uint64_t d, std::vector<std::int32_t>& ids) {
    const auto more = ids_of(d);
    ids.insert(ids.end(), more.begin(), more.end());
    return true;
  };
  return r;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void expect_corpus(const TokenCacheResult& r, std::uint64_t documents) {
  const auto corpus = TokenCorpus::open_megatron(r.idx, r.bin, {.dtype = TokenType::uint16});
  REQUIRE(corpus->documents() == documents);
  for (std::uint64_t d = 0; d < documents; ++d) {
    auto want = ids_of(d);
    want.push_back(kEos);
    REQUIRE(corpus->document(d).length == want.size());
    for (std::size_t i = 0; i < want.size(); ++i) REQUIRE(corpus->token(d, i) == static_cast<std::uint32_t>(want[i]));
  }
}

// Names in dir/tokens other than the dataset and its lock (work files).
std::vector<std::string> leftovers(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir + "/tokens")) {
    const std::string ext = e.path().extension().string();
    if (ext != ".bin" && ext != ".idx" && ext != ".lock") names.push_back(e.path().filename().string());
  }
  return names;
}

}  // namespace

TEST_CASE("text is tokenized once into a Megatron dataset, the same for any thread count") {
  TempDir one, three;
  const TokenCacheResult a = tokenize_cached(request(one.path().string(), 1000, 1));
  const TokenCacheResult b = tokenize_cached(request(three.path().string(), 1000, 3));
  REQUIRE_FALSE(a.reused);
  REQUIRE(a.tokens == b.tokens);
  REQUIRE(slurp(a.bin) == slurp(b.bin));
  REQUIRE(slurp(a.idx) == slurp(b.idx));
  expect_corpus(b, 1000);
  REQUIRE(leftovers(three.path().string()).empty());
  const TokenCacheResult again = tokenize_cached(request(three.path().string(), 1000, 2));
  REQUIRE(again.reused);
  REQUIRE(again.idx == b.idx);
  // Another identity is another dataset.
  REQUIRE_FALSE(tokenize_cached(request(three.path().string(), 999, 2)).reused);
  // A whole dataset is used without taking its lock (a cache on a read-only
  // mount): here the lock cannot be opened, as a directory in its place.
  const std::string lock = b.idx.substr(0, b.idx.size() - 4) + ".lock";
  std::filesystem::remove(lock);
  std::filesystem::create_directory(lock);
  REQUIRE(tokenize_cached(request(three.path().string(), 1000, 2)).reused);
}

TEST_CASE("documents encode leaves out (on_error = skip) are not in the dataset, for any thread count") {
  TempDir one, three;
  auto skipping = [](const std::string& dir, unsigned threads) {
    TokenCacheRequest r = request(dir, 100, threads);
    r.encode = [](std::uint64_t d, std::vector<std::int32_t>& ids) {
      if (d % 10 == 3 || d == 99) return false;
      const auto more = ids_of(d);
      ids.insert(ids.end(), more.begin(), more.end());
      return true;
    };
    return r;
  };
  const TokenCacheResult a = tokenize_cached(skipping(one.path().string(), 1));
  const TokenCacheResult b = tokenize_cached(skipping(three.path().string(), 3));
  REQUIRE(a.left_out == 11);
  REQUIRE(b.left_out == 11);
  REQUIRE(slurp(a.bin) == slurp(b.bin));
  REQUIRE(slurp(a.idx) == slurp(b.idx));
  const auto corpus = TokenCorpus::open_megatron(b.idx, b.bin, {});
  REQUIRE(corpus->documents() == 89);
  std::uint64_t at = 0;
  for (std::uint64_t d = 0; d < 100; ++d) {
    if (d % 10 == 3 || d == 99) continue;
    auto want = ids_of(d);
    want.push_back(kEos);
    REQUIRE(corpus->document(at).length == want.size());
    for (std::size_t i = 0; i < want.size(); ++i) REQUIRE(corpus->token(at, i) == static_cast<std::uint32_t>(want[i]));
    ++at;
  }
}

TEST_CASE("a failed tokenization leaves neither a dataset nor work files") {
  TempDir dir;
  SECTION("encode throws") {
    TokenCacheRequest r = request(dir.path().string(), 100, 2);
    r.encode = [](std::uint64_t d, std::vector<std::int32_t>& ids) {
      if (d == 70) throw sluice::Error("docs.jsonl line 71: not JSON");
      ids.push_back(5);
      return true;
    };
    REQUIRE_THROWS_WITH(tokenize_cached(r), Catch::Contains("docs.jsonl line 71"));
  }
  SECTION("an id past uint16") {
    TokenCacheRequest r = request(dir.path().string(), 10, 2);
    r.encode = [](std::uint64_t d, std::vector<std::int32_t>& ids) {
      ids.push_back(d == 8 ? 70000 : 3);
      return true;
    };
    REQUIRE_THROWS_WITH(tokenize_cached(r), Catch::Contains("document 8") && Catch::Contains("70000"));
  }
  REQUIRE(leftovers(dir.path().string()).empty());
  for (const auto& e : std::filesystem::directory_iterator(dir.path().string() + "/tokens"))
    REQUIRE(e.path().extension() == ".lock");
}

TEST_CASE("processes racing for one corpus: one tokenizes, a killed one leaves nothing used") {
  TempDir dir;
  const std::string counter = dir.path().string() + "/encodes";
  constexpr std::uint64_t kDocs = 300;
  // Each encode appends one byte to `counter` (O_APPEND: whole bytes from every process).
  auto counting = [&](unsigned threads, int delay_us) {
    TokenCacheRequest r = request(dir.path().string(), kDocs, threads);
    r.encode = [counter, delay_us](std::uint64_t d, std::vector<std::int32_t>& ids) {
      const int fd = ::open(counter.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
      if (fd >= 0) {
        [[maybe_unused]] const ssize_t n = ::write(fd, "x", 1);
        ::close(fd);
      }
      if (delay_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(delay_us));
      const auto more = ids_of(d);
      ids.insert(ids.end(), more.begin(), more.end());
      return true;
    };
    return r;
  };
  // A slow tokenizer killed part way: its work is never taken for a dataset.
  const pid_t slow = ::fork();
  if (slow == 0) {
    try {
      tokenize_cached(counting(2, 2000));
    } catch (...) {
    }
    ::_exit(0);
  }
  REQUIRE(slow > 0);
  while (!std::filesystem::exists(counter) || std::filesystem::file_size(counter) < 20)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ::kill(slow, SIGKILL);
  ::waitpid(slow, nullptr, 0);
  std::filesystem::remove(counter);
  // Six processes at once: exactly one encodes every document.
  std::vector<pid_t> children;
  for (int k = 0; k < 6; ++k) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      int code = 1;
      try {
        const TokenCacheResult r = tokenize_cached(counting(1 + k % 3, 0));
        code = std::filesystem::exists(r.idx) ? 0 : 2;
      } catch (...) {
      }
      ::_exit(code);
    }
    REQUIRE(pid > 0);
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    REQUIRE((WIFEXITED(status) && WEXITSTATUS(status) == 0));
  }
  REQUIRE(std::filesystem::file_size(counter) == kDocs);
  const TokenCacheResult r = tokenize_cached(request(dir.path().string(), kDocs, 1));
  REQUIRE(r.reused);
  expect_corpus(r, kDocs);
  REQUIRE(leftovers(dir.path().string()).empty());
}
