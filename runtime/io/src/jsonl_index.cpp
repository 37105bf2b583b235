// JSON lines indexes and decompressed copies (see sluice/io/jsonl.h).
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>
#include <ostream>

#include "file_util.h"
#include "jsonl_index.h"
#include "sluice/error.h"

namespace sluice::io {
namespace detail {

void LineScanner::feed(const char* data, std::size_t n) {
  std::size_t i = 0;
  while (i < n) {
    const auto* nl = static_cast<const char*>(std::memchr(data + i, '\n', n - i));
    const std::size_t stop = nl ? static_cast<std::size_t>(nl - data) : n;
    const bool bom = pos_ == 0 && i == 0 && stop >= kUtf8BomSize && std::memcmp(data, kUtf8Bom, kUtf8BomSize) == 0;
    for (std::size_t j = bom ? kUtf8BomSize : i; !nonblank_ && j < stop; ++j)
      nonblank_ = !(data[j] == ' ' || data[j] == '\t' || data[j] == '\r');
    if (stop > i) last_ = data[stop - 1];
    pos_ += stop - i;
    if (!nl) break;
    end_line();
    pos_ += 1;
    i = stop + 1;
    line_start_ = pos_;
    nonblank_ = false;
    last_ = 0;
    ++line_;
  }
}

void LineScanner::end_line() {
  if (!nonblank_) return;
  const std::uint64_t length = pos_ - line_start_ - (last_ == '\r' ? 1 : 0);
  if (length > std::numeric_limits<std::uint32_t>::max())
    throw Error(path_ + ": line " + std::to_string(line_) + ": longer than 4 GiB");
  index_.offsets.push_back(line_start_);
  index_.lengths.push_back(static_cast<std::uint32_t>(length));
  index_.lines.push_back(line_);
}

JsonlIndex LineScanner::finish() {
  if (pos_ > line_start_) end_line();
  index_.text_size = pos_;
  return std::move(index_);
}

Compression sniff_compression(const std::string& path) {
  Fd fd = open_read(path);
  unsigned char magic[4] = {0, 0, 0, 0};
  const std::size_t got = pread_full(fd.get(), std::as_writable_bytes(std::span(magic)), 0, path);
  if (got >= 2 && magic[0] == 0x1f && magic[1] == 0x8b) return Compression::gzip;
  if (got >= 4 && magic[0] == 0x28 && magic[1] == 0xb5 && magic[2] == 0x2f && magic[3] == 0xfd)
    return Compression::zstd;
  return Compression::none;
}

namespace {

constexpr std::size_t kChunk = 1 << 20;

// Decompresses chunks of a file, gzip (any number of members) or zstd (any
// number of frames), handing the output to `sink`. Returns "" when the input
// ends cleanly, else why it stopped (corrupt or cut).
class Decompressor {
 public:
  virtual ~Decompressor() = default;
  // Feeds `in`; output goes to sink. Returns false with *why on corruption,
  // having consumed used() bytes of `in`.
  virtual bool feed(std::span<const unsigned char> in, const std::function<void(const char*, std::size_t)>& sink,
                    std::string* why) = 0;
  // Whether the input so far ends at a member/frame boundary.
  virtual bool at_boundary() const = 0;
  std::size_t used() const { return used_; }
  // Output bytes through the last member/frame that ended whole: a gzip
  // member's end checks its CRC-32 and length, a zstd frame's its checksum
  // when it has one. Output past it that corrupt input produced may be
  // garbage anywhere, not only at the damage: it is not to be used.
  std::uint64_t checked_bytes() const { return checked_; }

 protected:
  // Counts n output bytes; at a member/frame's end, all so far are checked.
  void produced(std::size_t n, bool member_ended) {
    total_ += n;
    if (member_ended) checked_ = total_;
  }
  std::size_t used_ = 0;

 private:
  std::uint64_t total_ = 0, checked_ = 0;
};

class GzipDecompressor final : public Decompressor {
 public:
  GzipDecompressor() {
    if (inflateInit2(&z_, 15 + 16) != Z_OK) throw Error("zlib: inflateInit2 failed");
  }
  ~GzipDecompressor() override { inflateEnd(&z_); }
  bool feed(std::span<const unsigned char> in, const std::function<void(const char*, std::size_t)>& sink,
            std::string* why) override {
    z_.next_in = const_cast<unsigned char*>(in.data());
    z_.avail_in = static_cast<uInt>(in.size());
    for (;;) {
      if (boundary_) {
        if (z_.avail_in == 0) return true;
        inflateReset(&z_);  // a next member begins
        boundary_ = false;
      }
      z_.next_out = reinterpret_cast<unsigned char*>(out_.data());
      z_.avail_out = static_cast<uInt>(out_.size());
      const int rc = inflate(&z_, Z_NO_FLUSH);
      sink(out_.data(), out_.size() - z_.avail_out);
      produced(out_.size() - z_.avail_out, rc == Z_STREAM_END);
      if (rc == Z_STREAM_END) {
        boundary_ = true;
      } else if (rc == Z_BUF_ERROR) {
        return true;  // no progress possible: more input needed
      } else if (rc != Z_OK) {
        *why = std::string("corrupt gzip data (") + (z_.msg ? z_.msg : "inflate error " + std::to_string(rc)) + ")";
        used_ = in.size() - z_.avail_in;
        return false;
      } else if (z_.avail_in == 0 && z_.avail_out != 0) {
        return true;  // all input taken and all output given
      }
    }
  }
  bool at_boundary() const override { return boundary_; }

 private:
  z_stream z_{};
  std::vector<char> out_ = std::vector<char>(kChunk);
  bool boundary_ = false;
};

class ZstdDecompressor final : public Decompressor {
 public:
  ZstdDecompressor() : d_(ZSTD_createDCtx()) {
    if (!d_) throw Error("zstd: cannot create a decompression context");
  }
  ~ZstdDecompressor() override { ZSTD_freeDCtx(d_); }
  bool feed(std::span<const unsigned char> in, const std::function<void(const char*, std::size_t)>& sink,
            std::string* why) override {
    ZSTD_inBuffer input{in.data(), in.size(), 0};
    bool full = false;  // the last call filled the output: the decoder may hold more
    while (input.pos < input.size || full) {
      ZSTD_outBuffer output{out_.data(), out_.size(), 0};
      const std::size_t before = input.pos;
      const std::size_t rc = ZSTD_decompressStream(d_, &output, &input);
      if (ZSTD_isError(rc)) {
        *why = std::string("corrupt zstd data (") + ZSTD_getErrorName(rc) + ")";
        used_ = input.pos;
        return false;
      }
      sink(out_.data(), output.pos);
      produced(output.pos, rc == 0);
      if (input.pos > before || output.pos > 0) boundary_ = rc == 0;  // 0: a frame just ended
      full = output.pos == output.size;
    }
    return true;
  }
  bool at_boundary() const override { return boundary_; }

 private:
  ZSTD_DCtx* d_;
  std::vector<char> out_ = std::vector<char>(kChunk);
  bool boundary_ = true;
};

}  // namespace

DecompressedCopy decompress_jsonl(const std::string& path, Compression compression, const std::string& copy_path,
                                  OnError on_error) {
  Fd fd = open_read(path);
  const std::uint64_t size = file_size(fd.get(), path);
  std::unique_ptr<Decompressor> d;
  if (compression == Compression::gzip) d = std::make_unique<GzipDecompressor>();
  else d = std::make_unique<ZstdDecompressor>();
  DecompressedCopy result;
  LineScanner scanner(path);
  std::string tail;  // decompressed bytes after the last newline, written once complete
  std::uint64_t written = 0;  // bytes of complete lines written to the copy
  auto run = [&](std::ostream& out) {
    std::vector<unsigned char> in(kChunk);
    std::uint64_t offset = 0;
    auto sink = [&](const char* data, std::size_t n) {
      if (n == 0) return;
      scanner.feed(data, n);
      const void* nl = nullptr;
      for (std::size_t k = n; k > 0; --k)
        if (data[k - 1] == '\n') {
          nl = data + k - 1;
          break;
        }
      if (!nl) {
        tail.append(data, n);
        return;
      }
      const std::size_t head = static_cast<std::size_t>(static_cast<const char*>(nl) - data) + 1;
      out.write(tail.data(), static_cast<std::streamsize>(tail.size()));
      out.write(data, static_cast<std::streamsize>(head));
      result.complete_bytes += tail.size() + head;
      tail.assign(data + head, n - head);
    };
    std::string why;
    bool corrupt = false;
    while (offset < size) {
      const std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(kChunk, size - offset));
      const std::size_t got = pread_full(fd.get(), std::as_writable_bytes(std::span(in.data(), want)), offset, path);
      if (got == 0) break;
      if (!d->feed({in.data(), got}, sink, &why)) {
        offset += d->used();
        corrupt = true;
        break;
      }
      offset += got;
    }
    if (why.empty() && !d->at_boundary())
      why = std::string("the ") + (compression == Compression::gzip ? "gzip" : "zstd") + " stream is cut short";
    if (!why.empty()) {
      result.damage = path + ": " + why + (corrupt ? " at" : " after") + " compressed byte " + std::to_string(offset) +
                      " (" + std::to_string(result.complete_bytes + tail.size()) + " bytes decompressed)";
      if (on_error == OnError::fail) throw Error(result.damage);
      // A stream cut short decompressed its bytes right: its complete lines
      // are kept. Corrupt input may have decompressed to garbage anywhere
      // since the last member or frame that passed its check: only the
      // complete lines before that end are kept.
      written = result.complete_bytes;
      if (!corrupt) result.damage += "; its lines up to the last whole one there are used";
      if (corrupt) {
        result.complete_bytes = std::min(result.complete_bytes, d->checked_bytes());
        result.damage += d->checked_bytes() == 0
                             ? "; nothing in it passed a check, so none of its lines are used"
                             : "; only its lines in the first " + std::to_string(d->checked_bytes()) +
                                   " decompressed bytes, which passed their check, are used";
      }
      return;  // the complete lines are written; the tail is dropped
    }
    out.write(tail.data(), static_cast<std::streamsize>(tail.size()));
    result.complete_bytes += tail.size();
  };
  // The copy is written under a name of this process's own, then renamed to
  // COPY when whole or COPY.cut when damaged (never taken for a good copy).
  // Processes that decompress one file at once each rename their own whole
  // copy into place: rename is atomic, so a reader opens one whole copy, and
  // every copy of one compressed file has the same bytes.
  remove_dead_writers(copy_path + ".part");
  const std::string own_path = copy_path + ".part" + std::to_string(::getpid());
  write_atomically(own_path, run);
  if (result.complete_bytes < written) {
    // Corrupt input: the checked bytes end inside a line; the copy ends at the newline before.
    const Fd copy = open_read(own_path);
    std::vector<unsigned char> chunk(kChunk);
    std::uint64_t end = result.complete_bytes;
    result.complete_bytes = 0;
    while (end > 0 && result.complete_bytes == 0) {
      const std::uint64_t from = end - std::min<std::uint64_t>(end, kChunk);
      const std::size_t n = static_cast<std::size_t>(end - from);
      pread_full(copy.get(), std::as_writable_bytes(std::span(chunk.data(), n)), from, own_path);
      for (std::size_t k = n; k > 0 && result.complete_bytes == 0; --k)
        if (chunk[k - 1] == '\n') result.complete_bytes = from + k;
      end = from;
    }
  }
  // The copy holds no more than the bytes kept (corrupt input's unchecked lines are cut off).
  if (!result.damage.empty() && ::truncate(own_path.c_str(), static_cast<off_t>(result.complete_bytes)) != 0) {
    const int err = errno;
    std::remove(own_path.c_str());
    throw Error("cannot write " + own_path + ": " + std::strerror(err));
  }
  JsonlIndex index = scanner.finish();
  result.copy_path = result.damage.empty() ? copy_path : copy_path + ".cut";
  if (std::rename(own_path.c_str(), result.copy_path.c_str()) != 0) {
    const int err = errno;
    std::remove(own_path.c_str());
    throw Error("cannot write " + result.copy_path + ": " + std::strerror(err));
  }
  // A whole copy replaces a damaged one made before the file was mended.
  if (result.damage.empty()) std::remove((copy_path + ".cut").c_str());
  if (!result.damage.empty()) {
    // The index keeps the lines written: those a newline ended.
    while (!index.offsets.empty() && index.offsets.back() + index.lengths.back() >= result.complete_bytes) {
      index.offsets.pop_back();
      index.lengths.pop_back();
      index.lines.pop_back();
    }
    index.text_size = result.complete_bytes;
  }
  result.index = std::move(index);
  return result;
}

}  // namespace detail

JsonlIndex scan_jsonl(const std::string& plain_path) {
  detail::Fd fd = detail::open_read(plain_path);
  const std::uint64_t size = detail::file_size(fd.get(), plain_path);
  const std::int64_t mtime = detail::mtime_ns(plain_path);
  posix_fadvise(fd.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
  detail::LineScanner scanner(plain_path);
  std::vector<char> buf(1 << 20);
  std::uint64_t offset = 0;
  while (offset < size) {
    const std::size_t got = detail::pread_full(fd.get(), std::as_writable_bytes(std::span(buf)), offset, plain_path);
    if (got == 0) break;
    scanner.feed(buf.data(), got);
    offset += got;
  }
  JsonlIndex index = scanner.finish();
  index.text_mtime_ns = mtime;
  return index;
}

void write_jsonl_index(const std::string& index_path, const JsonlIndex& index) {
  detail::write_atomically(index_path, [&](std::ostream& out) {
    out << "sluice-jsonl-index 3 " << index.text_size << ' ' << index.records() << ' ' << index.text_mtime_ns << ' '
        << index.source_size << ' ' << index.source_mtime_ns << '\n';
    for (std::size_t i = 0; i < index.records(); ++i)
      out << index.offsets[i] << ' ' << index.lengths[i] << ' ' << index.lines[i] << '\n';
  });
}

std::optional<JsonlIndex> load_jsonl_index(const std::string& index_path, const std::string& text,
                                           const std::string& source) {
  struct stat ts;
  if (::stat(text.c_str(), &ts) != 0) return std::nullopt;
  std::ifstream in(index_path);
  std::string magic;
  int version = 0;
  std::uint64_t count = 0;
  JsonlIndex index;
  // Version 2 (no source identity) still serves a plain file.
  if (!(in >> magic >> version >> index.text_size >> count >> index.text_mtime_ns) || magic != "sluice-jsonl-index" ||
      (version != 2 && version != 3) || index.text_size != static_cast<std::uint64_t>(ts.st_size) ||
      count > index.text_size || index.text_mtime_ns == 0 || index.text_mtime_ns != detail::mtime_ns(ts))
    return std::nullopt;
  if (version == 3 && !(in >> index.source_size >> index.source_mtime_ns)) return std::nullopt;
  if (!source.empty()) {
    struct stat ss;
    if (version != 3 || ::stat(source.c_str(), &ss) != 0 || index.source_size != static_cast<std::uint64_t>(ss.st_size) ||
        index.source_mtime_ns != detail::mtime_ns(ss))
      return std::nullopt;
  }
  index.offsets.reserve(count);
  index.lengths.reserve(count);
  index.lines.reserve(count);
  std::uint64_t offset, length, line, end = 0, last_line = 0;
  while (in >> offset >> length >> line) {
    if (offset < end || length == 0 || length > index.text_size - offset || line <= last_line) return std::nullopt;
    index.offsets.push_back(offset);
    index.lengths.push_back(static_cast<std::uint32_t>(length));
    index.lines.push_back(line);
    end = offset + length;
    last_line = line;
  }
  if (!in.eof() || index.records() != count) return std::nullopt;
  return index;
}

}  // namespace sluice::io
