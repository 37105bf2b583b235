#include "sluice/text/token_cache.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <thread>

#include "mapped_file.h"
#include "sluice/error.h"
#include "sluice/record.h"

namespace sluice::text {
namespace {

[[noreturn]] void fail(const std::string& what, const std::string& path) {
  throw Error("token cache: cannot " + what + " " + path + ": " + std::strerror(errno));
}

// A descriptor closed with its scope.
struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
};

// A file written through a buffer: write(2) in 1 MiB pieces.
class Writer {
 public:
  explicit Writer(std::string path)
      : path_(std::move(path)), fd_(::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) {
    if (fd_.fd < 0) fail("create", path_);
    buffer_.reserve(kBuffer);
  }
  void put(const void* data, std::size_t size) {
    const auto* p = static_cast<const char*>(data);
    buffer_.insert(buffer_.end(), p, p + size);
    if (buffer_.size() >= kBuffer) flush();
  }
  void flush() {
    std::size_t done = 0;
    while (done < buffer_.size()) {
      const ssize_t n = ::write(fd_.fd, buffer_.data() + done, buffer_.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) fail("write", path_);
      done += static_cast<std::size_t>(n);
    }
    buffer_.clear();
  }
  void sync() {
    flush();
    if (::fsync(fd_.fd) != 0) fail("fsync", path_);
  }
  int fd() const { return fd_.fd; }

 private:
  static constexpr std::size_t kBuffer = 1 << 20;
  std::string path_;
  Fd fd_;
  std::vector<char> buffer_;
};

// Appends all of `from` to `to` (copy_file_range, in the kernel).
void append_file(const std::string& from, Writer& to, const std::string& to_path) {
  to.flush();
  Fd in(::open(from.c_str(), O_RDONLY | O_CLOEXEC));
  if (in.fd < 0) fail("open", from);
  for (;;) {
    const ssize_t n = ::copy_file_range(in.fd, nullptr, to.fd(), nullptr, 1 << 30, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail("copy into", to_path);
    if (n == 0) return;
  }
}

void rename_or_fail(const std::string& from, const std::string& to) {
  if (::rename(from.c_str(), to.c_str()) != 0) fail("rename to", to);
}

std::string hex16(std::uint64_t v) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(v));
  return text;
}

// One thread's documents: ids into KEY.partK, lengths kept.
struct Part {
  std::string path;
  std::vector<std::int32_t> lengths;
  std::uint64_t tokens = 0;
  std::uint64_t left_out = 0;
  std::string error;
};

void encode_range(const TokenCacheRequest& r, std::uint64_t begin, std::uint64_t end, Part& part) {
  try {
    Writer out(part.path);
    std::vector<std::int32_t> ids;
    std::vector<std::uint16_t> narrow;
    part.lengths.reserve(end - begin);
    for (std::uint64_t d = begin; d < end; ++d) {
      ids.clear();
      if (!r.encode(d, ids)) {
        ++part.left_out;
        continue;
      }
      ids.push_back(static_cast<std::int32_t>(r.eos));
      if (ids.size() > static_cast<std::size_t>(INT32_MAX))
        throw Error("document " + std::to_string(d) + " has " + std::to_string(ids.size()) +
                    " tokens, more than a Megatron index holds (2^31 - 1)");
      if (r.dtype == TokenType::uint16) {
        narrow.resize(ids.size());
        for (std::size_t i = 0; i < ids.size(); ++i) {
          if (ids[i] < 0 || ids[i] > 0xffff)
            throw Error("document " + std::to_string(d) + ": token id " + std::to_string(ids[i]) +
                        " does not fit uint16");
          narrow[i] = static_cast<std::uint16_t>(ids[i]);
        }
        out.put(narrow.data(), narrow.size() * 2);
      } else {
        out.put(ids.data(), ids.size() * 4);
      }
      part.lengths.push_back(static_cast<std::int32_t>(ids.size()));
      part.tokens += ids.size();
    }
    out.flush();
  } catch (const std::exception& e) {
    part.error = e.what();
  }
}

// megatron.core.datasets.indexed_dataset's version 1 index: one sequence per
// document, document_indices 0..n (token_file.cpp reads it).
void write_index(const std::string& path, TokenType dtype, const std::vector<Part>& parts) {
  Writer idx(path);
  std::uint64_t sequences = 0;
  for (const Part& p : parts) sequences += p.lengths.size();
  const std::uint64_t version = 1, documents = sequences + 1;
  const std::uint8_t code = dtype == TokenType::uint16 ? 8 : 4;
  idx.put("MMIDIDX\0\0", 9);
  idx.put(&version, 8);
  idx.put(&code, 1);
  idx.put(&sequences, 8);
  idx.put(&documents, 8);
  for (const Part& p : parts) idx.put(p.lengths.data(), p.lengths.size() * 4);
  const std::int64_t width = dtype == TokenType::uint16 ? 2 : 4;
  std::int64_t at = 0;
  for (const Part& p : parts)
    for (const std::int32_t n : p.lengths) {
      idx.put(&at, 8);
      at += n * width;
    }
  for (std::int64_t d = 0; d <= static_cast<std::int64_t>(sequences); ++d) idx.put(&d, 8);
  idx.sync();
}

// Work files of KEY left by a tokenizer that died (its lock died with it).
void remove_stale_work(const std::string& dir, const std::string& key) {
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(key + ".part", 0) == 0 || name == key + ".bin.tmp" || name == key + ".idx.tmp")
      std::filesystem::remove(e.path(), ec);
  }
}

}  // namespace

TokenCacheResult tokenize_cached(const TokenCacheRequest& r) {
  const std::string dir = r.dir + "/tokens";
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw Error("token cache: cannot create " + dir + ": " + ec.message());
  const std::string key = dir + "/" + hex16(digest_bytes(r.identity.data(), r.identity.size()));
  TokenCacheResult result{.idx = key + ".idx", .bin = key + ".bin"};
  // Published whole (KEY.idx is renamed in last): used without the lock, so
  // a cache on a read-only mount, made elsewhere, serves as it is.
  if (detail::file_exists(result.idx)) {
    result.reused = true;
    return result;
  }
  Fd lock(::open((key + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
  if (lock.fd < 0) fail("create", key + ".lock");
  while (::flock(lock.fd, LOCK_EX) != 0)
    if (errno != EINTR) fail("lock", key + ".lock");
  if (detail::file_exists(result.idx)) {  // published by the process that held the lock before
    result.reused = true;
    return result;
  }
  remove_stale_work(dir, key.substr(dir.size() + 1));
  const auto start = std::chrono::steady_clock::now();
  const std::uint64_t count = std::max<std::uint64_t>(1, std::min<std::uint64_t>(r.threads, r.documents));
  std::vector<Part> parts(count);
  for (std::uint64_t k = 0; k < count; ++k) parts[k].path = key + ".part" + std::to_string(k);
  auto remove_work = [&] {
    for (const Part& p : parts) ::unlink(p.path.c_str());
    ::unlink((key + ".bin.tmp").c_str());
    ::unlink((key + ".idx.tmp").c_str());
  };
  try {
    {
      std::vector<std::jthread> threads;
      for (std::uint64_t k = 1; k < count; ++k)
        threads.emplace_back(encode_range, std::cref(r), r.documents * k / count, r.documents * (k + 1) / count,
                             std::ref(parts[k]));
      encode_range(r, 0, r.documents / count, parts[0]);
    }  // joined here
    std::uint64_t left_out = 0;
    for (const Part& p : parts) {
      if (!p.error.empty()) throw Error(p.error);
      left_out += p.left_out;
    }
    // Nothing to keep: an empty dataset published would be reused as if it were the text's.
    if (left_out == r.documents && r.documents > 0)
      throw Error("every one of the " + std::to_string(r.documents) + " documents was left out");
    {
      Writer bin(key + ".bin.tmp");
      for (Part& p : parts) {
        append_file(p.path, bin, key + ".bin.tmp");
        ::unlink(p.path.c_str());
        result.tokens += p.tokens;
        result.left_out += p.left_out;
      }
      bin.sync();
    }
    write_index(key + ".idx.tmp", r.dtype, parts);
    rename_or_fail(key + ".bin.tmp", result.bin);
    rename_or_fail(key + ".idx.tmp", result.idx);  // last: the dataset is whole from here
    Fd folder(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (folder.fd < 0 || ::fsync(folder.fd) != 0) fail("fsync", dir);
  } catch (...) {
    remove_work();
    throw;
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace sluice::text
